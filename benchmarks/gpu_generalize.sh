#!/usr/bin/env bash
# `--generalize` over the GPU drafts of KernelBench level 1 at their published sizes, on one GPU
# (nvidia-h200; carry .whl and .kb): the candidates of the merged bench table
# (MERGED_TGZ, its level1/), 8 verifications at a time, stopped DEADLINE_S after the start.
# $OUT gets results.json, table.md and log.txt (benchmarks/gpu_generalize.py).
#
#   run(command="bash benchmarks/gpu_generalize.sh", carry=[".whl", ".kb"], timeout_s=600)
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-540}
MERGED_TGZ=${MERGED_TGZ:-benchmarks/results/gpu/2026-12-01-s13/merged/bench_merged.tgz}
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p /tmp/gd && tar xzf "$MERGED_TGZ" -C /tmp/gd level1 || exit 2
python3 benchmarks/gpu_generalize.py /tmp/gd/level1 --kb .kb/level1 --device cuda \
  --jobs "${JOBS:-8}" --trials 2 --deadline $((DEADLINE_S - (SECONDS - START) - 20)) \
  --out "$OUT" ${ONLY:+--only "$ONLY"} >"$OUT/log.txt" 2>&1
echo "exit $? after $((SECONDS - START)) s" >>"$OUT/log.txt"
tail -n 5 "$OUT/log.txt"
head -n 8 "$OUT/table.md" 2>/dev/null | tail -n 6
