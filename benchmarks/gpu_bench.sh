#!/usr/bin/env bash
# `agent bench` over the examples on a two-GPU machine (nvidia-h200-x2), ~5 minutes, one run
# after the other (two processes must not time on the same GPU at once):
#   1. replay backend: 4 candidates per problem from the example kernels, good and broken
#      (benchmarks/replay_examples.py): pass@k, fast_p, statuses, speedups;
#   2. compiler backend: torch.compile's Triton as the one candidate per problem.
#     bash benchmarks/gpu_bench.sh
# Writes to $OUT each bench's report.md/json and plots, and the whole output directory (every
# candidate and verdict) as a .tgz: the device tool does not bring back deep folders.
set -u
source "$(dirname "$0")/_gpu_env.sh"
export CUDA_VISIBLE_DEVICES=0,1
B=/tmp/bench; mkdir -p "$B"
python3 benchmarks/replay_examples.py --samples 4 --out "$OUT/replies.jsonl"
timeout 220 python3 -m agent bench examples/problems --backend replay --replies "$OUT/replies.jsonl" \
  --samples 4 --k 1,2,4 --jobs-per-gpu 4 --timeout 20 --out "$B/bench_replay" 2>&1 | grep -v Warning | tail -45
timeout 200 python3 -m agent bench examples/problems --backend compiler --samples 1 --k 1 \
  --jobs-per-gpu 4 --out "$B/bench_compiler" 2>&1 | grep -v Warning | tail -20
for b in bench_replay bench_compiler; do
  mkdir -p "$OUT/$b"; cp "$B/$b"/report.* "$B/$b"/*.png "$OUT/$b/" 2>/dev/null
  tar czf "$OUT/$b.tgz" -C "$B" "$b"
done
echo "repo root on the device: $PWD"
