#!/usr/bin/env bash
# Session 16's memory/time regression on large problems, checked on one H200 (about 5 minutes):
# KernelBench's level1/20_LeakyReLU at its published size (6.4 GB a tensor) was `ok` in ~40 s
# (host 6,707 MB, GPU 26,114 MB) at 1e55d4b and `crash` after 245 s (host 13,123 MB, GPU
# 36,868 MB) at 3cfa102. The causes found on the CPU and fixed: the precision sample drew its
# elements through a permutation of the whole output (92b77b2; 12.9 GB and minutes of one core
# for that output), and a large output's rows sample made the trial's inputs again beside both
# outputs (06a13fa). What this shows:
#   1. the sample's cost at the outputs of level1/20, 82 and 35 (benchmarks/memreg_sample_cost.py,
#      seconds);
#   2. the call that crashed, again: `agent bench` on level1/20 with the compiler drafter,
#      --no-tune (expected: ok, host peak near 1e55d4b's 6.7 GB, well under 245 s);
#   3. where a snapshot of the verifier before the fixes sits in ../.gpu_before (e.g. 609bff4)
#      and the candidates in .kb/cost (session 13's, as in gpu_s16_call1.sh): the verification
#      cost of level1/82 and level1/35 before and after (benchmarks/gpu_verify_cost.py; the
#      candidate job's "runs" timing was 3.9 s -> 89.5 s and 5.9 s -> 18.3 s at 609bff4).
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_memreg_check.sh", carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"],
#       kind="nvidia-h200", timeout_s=600)
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/memreg.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
[ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" >>"$LOG"

log "1. the precision sample's cost at KernelBench's output sizes"
timeout 120 python3 benchmarks/memreg_sample_cost.py --device cuda --out "$OUT" >>"$LOG" 2>&1
log "1: rc=$?"

log "2. agent bench, level1/20_LeakyReLU at its published size (crashed at 3cfa102)"
timeout 330 python3 -m agent bench --kernelbench .kb/kb --level 1 --problems 20 \
  --backend compiler --no-tune --out /tmp/memreg-bench --json \
  >"$OUT/bench20.json" 2>"$OUT/bench20_stderr.txt"
log "2: rc=$?"
tail -n 8 "$OUT/bench20_stderr.txt" >>"$LOG"
cp /tmp/memreg-bench/report.md "$OUT/bench20_report.md" 2>/dev/null
find /tmp/memreg-bench -name verdict.json -exec cp {} "$OUT/bench20_verdict.json" \; 2>/dev/null

if [ -d ../.gpu_before ] && [ -d .kb/cost ]; then
  LEFT=$((570 - (SECONDS - START)))
  log "3. verification cost, before ($(cat ../.gpu_before/COMMIT 2>/dev/null)) and now (${LEFT} s)"
  timeout "$LEFT" python3 benchmarks/gpu_verify_cost.py --before ../.gpu_before --after . \
    --kb .kb/cost --trials 5 --out "$OUT/verify_cost.json" \
    --only 82_conv_depthwise_2D_square_input_square_kernel,35_GroupNorm_ >>"$LOG" 2>&1
  log "3: rc=$?"
fi
log "done"
