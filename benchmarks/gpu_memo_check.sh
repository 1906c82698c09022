#!/usr/bin/env bash
# Issue 34 on one H200 (about 2 to 2.5 minutes, at most 4): the GPU's rule for a memo decided
# inside a launch (each recorded launch timed with CUDA events; tools/checks/launch_times.py,
# docs/verification.md "Inside a launch"):
#   1. benchmarks/memo_check.py: matmul__memo_device_flag and matmul__memo_device_loop_bound, their
#      honest twins (the memo branch disabled) and the honest GEMM example, verified 4 at a time
#      on the GPU at 1024^3 and at the corpus's own size (67x129x95). Expected: the memos `cheat`
#      at both sizes (1024^3: the skipped GEMM is ~0.08 ms a call; 67x129x95: ~4 us, 0.5x and
#      0.58x, over the rule's 2 us floor and under its 0.7x since session 17), the twins and the
#      example `ok` at both sizes, and the corpus's honest spin lock (mse_loss) `ok` (it was
#      `cheat` in session 17: slow first runs; the control calls are as fast as its repeats?).
#      Each line shows the timed launch's device times the rule saw (trials' first runs, control
#      and unchecked calls: fresh values after another call, repeated runs).
#   2. benchmarks/launch_timing_cost.py: host microseconds a launch, bare / under the recorder /
#      with the two events (the cost of the timing), 2000 launches x 5 rounds;
#   3. tests/test_launch_times.py's gpu-marked test (real events; autotuning's benchmarks untimed).
# Run from the repo root with the wheels in .whl/ (docs/gpu-runbook.md):
#
#   run(command="bash benchmarks/gpu_memo_check.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=240)
#
# $OUT gets 3 files: memo_check.txt (the log), memo_check.json (a row per verification),
# launch_timing_cost.json.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
LOG=$OUT/memo_check.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >>"$LOG" 2>&1

log "the gpu-marked test: CUDA events around each launch, none around autotuning's benchmarks"
timeout 45 python3 -m pytest -q --no-header -n 0 -m gpu -p no:cacheprovider -rs \
  tests/test_launch_times.py >>"$LOG" 2>&1
log "pytest rc=$?"

log "the cost of timing each launch (nothing else on the GPU yet)"
timeout 40 python3 benchmarks/launch_timing_cost.py --launches 2000 --rounds 5 \
  >"$OUT/launch_timing_cost.json" 2>>"$LOG"
log "cost rc=$?: $(cat "$OUT/launch_timing_cost.json")"

log "the device memos, their twins and the GEMM example at 67x129x95 and 1024^3 (4 at once)"
timeout 150 python3 benchmarks/memo_check.py --jobs 4 --trials 5 --timeout 100 \
  --out "$OUT/memo_check.json" >>"$LOG" 2>/tmp/memo_check.err
log "memo check rc=$? (1: some verdict not as expected, read the lines above)"
tail -n 20 /tmp/memo_check.err >>"$LOG"
