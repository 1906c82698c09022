#!/usr/bin/env bash
# Loop-mode bench with concurrent problem loops (`--loop-jobs`, default = the slots) on one H200:
# the 8 problems of session 7's run3 "tune" lane (there, one loop at a time with --jobs-per-gpu 8
# finished 3 of 8 in 420 s: benchmarks/results/gpu/2026-11-30-s7/run3_walltime_tune/tune/).
# `--backend compiler --mode loop --samples 6`, 8 jobs per GPU, SIGINT at RUN_S (the stop path
# of concurrent loops on a GPU: the report must still be written, exit 1), then the files.
#
#   run(command="bash benchmarks/gpu_loop_parallel.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=180)
#
# Environment: RUN_S [95] seconds before the SIGINT, JOBS_PER_GPU [8], LOOP_JOBS [] (default:
# the slots), PROBLEMS (level/name list, default the 8 below).
# $OUT: loop_parallel.txt (log: problems done, exit status, seconds from SIGINT to exit, the
# bench's stderr tail), report.md, report.json, bench.tgz (the output dir).
set -u
START=$SECONDS
RUN_S=${RUN_S:-95}
JOBS=${JOBS_PER_GPU:-8}
source "$(dirname "$0")/_gpu_env.sh"
PROBLEMS=${PROBLEMS:-"level1/1_Square_matrix_multiplication_ level1/4_Matrix_vector_multiplication_
level1/6_Matmul_with_large_K_dimension_ level1/17_Matmul_with_transposed_B level1/35_GroupNorm_
level1/50_conv_standard_2D__square_input__square_kernel
level1/65_conv_transposed_2D__square_input__asymmetric_kernel level2/14_Gemm_Divide_Sum_Scaling"}
W=/tmp/loop_parallel
rm -rf "$W" && mkdir -p "$W/problems"
LOG=$OUT/loop_parallel.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
[ -f COMMIT ] && echo "snapshot of $(cat COMMIT)" >>"$LOG"
for p in $PROBLEMS; do cp ".kb/$p.py" "$W/problems/" || log "no problem $p"; done
log "$(ls "$W/problems" | wc -l) problems, --jobs-per-gpu $JOBS, --loop-jobs ${LOOP_JOBS:-default}"
EXTRA=()
[ -n "${LOOP_JOBS:-}" ] && EXTRA=(--loop-jobs "$LOOP_JOBS")
# Through `timeout` (SIGINT at RUN_S): a command started with `&` in a script inherits SIGINT
# ignored, and a `kill -INT` from here was ignored (session 8's first run: killed 30 s after it);
# timeout's child gets SIGINT's default action back (what a Ctrl-C in a terminal sends).
timeout --foreground --signal=INT "$RUN_S" python -m agent bench "$W/problems" --backend compiler \
  --mode loop --samples 6 --jobs-per-gpu "$JOBS" ${EXTRA[@]+"${EXTRA[@]}"} --out "$W/out" --json \
  >"$W/stdout.txt" 2>"$W/stderr.txt" &
PID=$!
while kill -0 "$PID" 2>/dev/null && [ $((SECONDS - START)) -lt "$RUN_S" ]; do sleep 1; done
if kill -0 "$PID" 2>/dev/null; then
  log "SIGINT (timeout) at $((SECONDS - START)) s: $(ls "$W"/out/*/done.json 2>/dev/null | wc -l) problems done"
  T=$SECONDS
  for _ in $(seq 60); do kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$PID" 2>/dev/null && { log "still running 30 s after SIGINT: KILL"; pkill -KILL -P "$PID"; kill -KILL "$PID"; }
  wait "$PID"; RC=$?
  log "exit $RC, $((SECONDS - T)) s after the SIGINT"
else
  wait "$PID"; RC=$?
  log "finished by itself, exit $RC"
fi
log "problems done: $(ls "$W"/out/*/done.json 2>/dev/null | wc -l) of $(ls "$W/problems" | wc -l)"
grep -h "parallel slot\|time per problem\|success@k\|problems:" "$W/stderr.txt" >>"$LOG"
echo "--- stderr tail" >>"$LOG"; tail -40 "$W/stderr.txt" >>"$LOG"
cp "$W/out/report.md" "$W/out/report.json" "$OUT/" 2>/dev/null
tar czf "$OUT/bench.tgz" -C "$W" out stdout.txt stderr.txt
log "packed"
