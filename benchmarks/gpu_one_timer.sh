#!/usr/bin/env bash
# Issue 37's one timer on one H200 (about 3 minutes, at most 4): the three modes of
# tools.checks.timing.Timer where they run for real.
#   1. pytest tests/test_one_timer.py, tests/test_timing_memo.py, tests/test_timing_repeat.py
#      (their `gpu` tests time for real: the padded method, `measure`).
#   2. `agent profile --protocol kernelbench` on examples/problems/relu.py: the timing job's
#      `Timer.kernelbench` mode; profile.json's "kernelbench" block should hold eager and
#      candidate with num_trials 100 and warmup 3, beside our timing.
#   3. the compiler drafter on KernelBench level1/1 (4096^3 GEMM) and level1/50 (a convolution) with
#      --device cuda: the pickers time with `Timer.fastest_ms` (do_bench's minimum); the notes
#      should name GEMM tiles / launch configs "picked" or "kept at draft time" with times.
# Run from the repo root with the wheels in .whl/ and KernelBench in .kb/ (docs/gpu-runbook.md):
#
#   run(command="bash benchmarks/gpu_one_timer.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=300)
#
# $OUT gets 5 files: one_timer.txt (the log), pytest.txt, profile_kb.json, draft_1.json,
# draft_50.json (level1/23 is not in ../shared/kernelbench: session 18 found it missing).
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
LOG=$OUT/one_timer.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv >>"$LOG" 2>&1

log "pytest: the timer's tests, gpu ones included"
timeout 120 python3 -m pytest -q -n 0 tests/test_one_timer.py tests/test_timing_memo.py \
  tests/test_timing_repeat.py >"$OUT/pytest.txt" 2>&1
log "pytest rc=$? ($(tail -1 "$OUT/pytest.txt"))"

log "agent profile --protocol kernelbench (Timer.kernelbench in the timing job)"
timeout 90 python3 -m agent profile examples/problems/relu.py examples/kernels/relu.py \
  --protocol kernelbench --json >"$OUT/profile_kb.json" 2>>"$LOG"
log "profile rc=$?"
python3 - "$OUT/profile_kb.json" >>"$LOG" 2>&1 <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
r = json.loads(text[text.index("{"):])
print("status", r.get("status"), "kernelbench", json.dumps(r.get("kernelbench"))[:600])
EOF

for P in 1 50; do  # a GEMM (tile pick) and a convolution (conv pick): both time with Timer.fastest_ms
  F=$(ls .kb/kb/level1/${P}_*.py 2>/dev/null | head -1); [ -n "$F" ] || { log "no level1/${P}_*.py in .kb/kb"; continue; }
  log "draft on cuda: $F (Timer.fastest_ms in the pickers)"
  timeout 60 python3 -m tools.draft "$F" --device cuda --json >"$OUT/draft_$P.json" 2>>"$LOG"
  log "draft rc=$?"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('\n'.join(n for n in r.get('notes', []) if 'draft time' in n or 'timed' in n) or 'no timing notes')" "$OUT/draft_$P.json" >>"$LOG" 2>&1
done
log "done"
