#!/usr/bin/env bash
# Ctrl-C on a GPU (issue 17): a real SIGINT to `python -m agent` while it profiles and while it
# evaluates, and the time from the signal to the exit (agent/interrupt.py kills the command's
# sandbox jobs first; on the CPU this is tests/test_interrupt.py). Runs in about 90 s:
#
#   run(command="bash benchmarks/gpu_interrupt.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=300)
#
# $OUT/interrupt.txt: per case the command, the seconds from SIGINT to exit, the exit code (130
# expected), the last lines it printed, and for optimize the attempts on disk and the resume.
source "$(dirname "$0")/_gpu_env.sh"
LOG="$OUT/interrupt.txt"; : > "$LOG"
RUNS=$(mktemp -d)

interrupt_after() {  # SECONDS CMD...: SIGINT after SECONDS, report the time to exit
  local wait_s=$1; shift
  echo "== $* (SIGINT after ${wait_s}s)" >> "$LOG"
  "$@" > /tmp/int_out.txt 2>&1 &
  local pid=$!
  sleep "$wait_s"
  local t0; t0=$(date +%s.%N)
  kill -INT "$pid"
  wait "$pid"; local rc=$?
  local t1; t1=$(date +%s.%N)
  echo "exit code $rc, $(python3 -c "print(round($t1 - $t0, 1))") s from SIGINT to exit" >> "$LOG"
  tail -n 4 /tmp/int_out.txt | cut -c1-200 >> "$LOG"
}

# profiling: the timing job of a correct kernel (a few seconds of do_bench on a real size)
interrupt_after 12 timeout 120 python3 -m agent profile examples/problems/matmul.py examples/kernels/matmul.py
# optimize: the compiler seed, then the timing of its draft
interrupt_after 25 timeout 200 python3 -m agent optimize examples/problems/softmax.py \
  --runs-dir "$RUNS" --run-id r --budget 2
echo "attempts on disk: $(ls "$RUNS/r/attempts" 2>/dev/null | tr '\n' ' ')" >> "$LOG"
echo "== resume" >> "$LOG"
timeout 200 python3 -m agent optimize --resume r --runs-dir "$RUNS" 2>&1 | grep -E "resum|attempt|stopped|finished" | cut -c1-200 >> "$LOG"
cat "$LOG"
