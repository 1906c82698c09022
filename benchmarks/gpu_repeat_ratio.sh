#!/usr/bin/env bash
# The repeat check against the reference's own ratio, on one H200 (about 3 minutes, at most 4):
#   1. benchmarks/repeat_ratio.py: eager PyTorch timed the way the timing job times (L2 flush
#      before every call), on new values every call against the same values every call, 3 rounds,
#      on KernelBench level1/50 (the 2-D convolution refused in session 17) and level1/1 (4096^3
#      GEMM) at fp16, bf16 and fp32. Shows whether the hardware itself is faster on repeats
#      (the hypothesis: ratios near 0.79 at fp16 for the convolution) and how stable the ratio is.
#   2. `agent bench --precision fp16` on level1/50 with the compiler drafter (as
#      benchmarks/gpu_precision_check.sh in session 17): expected `ok` now, not `cheat`; a
#      refusal's message names both ratios.
# Run from the repo root with the wheels in .whl/ and KernelBench in .kb/ (docs/gpu-runbook.md):
#
#   run(command="bash benchmarks/gpu_repeat_ratio.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=300)
#
# $OUT gets 4 files: repeat_ratio.txt (the log), repeat_ratio.json (a row per problem and
# precision), fp16_50.json (the bench's sample verdicts), bench_fp16_50_stderr.txt.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
LOG=$OUT/repeat_ratio.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >>"$LOG" 2>&1

log "eager's repeated/fresh ratio: level1/50 and level1/1 at fp16, bf16, fp32 (3 rounds)"
timeout 80 python3 benchmarks/repeat_ratio.py --kernelbench .kb/kb --level 1 --problems 50,1 \
  --precisions fp16,bf16,fp32 --rounds 3 --out "$OUT/repeat_ratio.json" >>"$LOG" 2>&1
log "repeat_ratio rc=$?"

LEFT=$((220 - (SECONDS - START))); [ "$LEFT" -lt 60 ] && LEFT=60
log "agent bench --precision fp16, level 1 problem 50 (at most $LEFT s)"
timeout "$LEFT" python3 -m agent bench --kernelbench .kb/kb --level 1 --problems 50 \
  --backend compiler --no-tune --precision fp16 --jobs-per-gpu 4 \
  --out /tmp/repeat-fp16 --json >/tmp/repeat-fp16.json 2>"$OUT/bench_fp16_50_stderr.txt"
log "bench rc=$? (124: cut at its limit)"
python3 benchmarks/precision_summary.py /tmp/repeat-fp16 --json "$OUT/fp16_50.json" | tee -a "$LOG"
grep -rho '"reference_repeat"[^}]*}' /tmp/repeat-fp16 2>/dev/null | head -3 >>"$LOG"
log "done"
