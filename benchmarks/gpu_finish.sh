#!/usr/bin/env bash
# Finish a resumed KernelBench bench on a two-GPU machine (nvidia-h200-x2) in one device call,
# with the adversarial corpus on CUDA beside it: two lanes, one a GPU.
#   GPU 0: level1 (resumed from RESUME1), until the deadline.
#   GPU 1: level2 (resumed from RESUME2); then the adversarial corpus on CUDA
#          (benchmarks/adversarial_figures.py, up to 135 s); then benchmarks/gpu_conv_tune.sh on
#          the level-1 problems CONV_TUNE names (if set); then, in a bench directory of its
#          own, the level-2 problems named in RERUN2 again with today's code (a problem whose
#          earlier verdict came from older code), until the deadline.
# Everything comes back as one file, $OUT/finish.tgz (each bench's gpu_kernelbench.sh output
# and the corpus's JSON and log), plus finish.txt (this script's log) and summary.md.
#
#   run(command="RESUME1=.kb/resume/bench_level1.tgz RESUME2=.kb/resume/bench_level2.tgz
#       RERUN2='17_Conv2d_InstanceNorm_Divide,...' bash benchmarks/gpu_finish.sh",
#       carry=[".whl", ".kb"], kind="nvidia-h200-x2", timeout_s=600)
#
# Environment: DEADLINE_S [540] (everything, packing included, done by then), JOBS_PER_GPU [6],
# RESUME1, RESUME2 (tarballs of an earlier gpu_kernelbench.sh call), RERUN2 [] (comma-separated
# problem names, as for `agent bench --only`), CONV_TUNE [] (level-1 numbers for gpu_conv_tune.sh),
# ONLY1, ONLY2 [] (comma-separated problem names: this call runs only these of level 1 / 2, to
# put some first; a later call without them, resumed, runs the rest), ADV_FIRST [0] (1: the
# adversarial corpus runs on GPU 1 before the level-2 bench, so all of it runs (about 70 s on an
# H200, session 8); by default it gets what the bench leaves, and session 9's runs left 50 s),
# AFTER1 [] (comma-separated level-2 problem names GPU 0 runs, in a bench directory of its own
# (`after1`), once level 1 is done: split a level-2 list over both GPUs with ONLY2; merge the
# two directories afterwards with benchmarks/merge_benches.py).
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-540}
JOBS=${JOBS_PER_GPU:-6}
source "$(dirname "$0")/_gpu_env.sh" # wheels installed once, before the lanes start
FINAL=$OUT
W=/tmp/finish
mkdir -p "$W"
LOG=$W/finish.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
# a git-archive snapshot (.gpu_snap) has no .git of its own: its COMMIT file says what it is
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
[ -f COMMIT ] && echo "snapshot of $(cat COMMIT)" >>"$LOG"
left() { echo $((DEADLINE_S - 25 - (SECONDS - START))); } # 25 s: packing

bench() { # bench NAME GPU LEVEL [RESUME] [extra env...]: gpu_kernelbench.sh until the deadline
  local name=$1 gpu=$2 level=$3 resume=${4:-} rc t0=$SECONDS
  shift 4
  mkdir -p "$W/$name"
  log "GPU $gpu: $name ($level), up to $(left) s"
  env "$@" CUDA_VISIBLE_DEVICES=$gpu OUT=$W/$name LEVELS=$level BENCH_DIR=bench_$name \
    JOBS_PER_GPU=$JOBS RESUME_TGZ=$resume DEADLINE_S="$(left)" \
    bash benchmarks/gpu_kernelbench.sh >"$W/$name/stdout.txt" 2>&1
  rc=$?
  log "GPU $gpu: $name exit $rc after $((SECONDS - t0)) s: $(grep -h 'candidates done' "$W/$name/log.txt" | tail -1)"
}

lane0() {
  bench level1 0 level1 "${RESUME1:-}" X=1 ${ONLY1:+BENCH_ARGS=--only=$ONLY1}
  if [ -n "${AFTER1:-}" ] && [ "$(left)" -gt 90 ]; then # GPU 0's spare time: level-2 problems
    bench after1 0 level2 "" BENCH_ARGS="--only $AFTER1"
  fi
}

adversarial() { # the corpus on CUDA on GPU 1, up to 135 s (or what is left)
  local t=$(($(left) < 135 ? $(left) : 135)) t0=$SECONDS
  if [ "$t" -gt 30 ]; then
    mkdir -p "$W/adversarial"
    log "GPU 1: adversarial corpus on CUDA, up to $t s"
    CUDA_VISIBLE_DEVICES=1 ADV_JOBS_PER_GPU=4 timeout "$t" python3 benchmarks/adversarial_figures.py \
      --device cuda --json --no-write >"$W/adversarial/adversarial_cuda.json" \
      2>"$W/adversarial/adversarial_cuda.log"
    local rc=$?
    log "GPU 1: adversarial exit $rc after $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo " (cut at its limit; the log has every case that finished)")"
  fi
}

lane1() {
  [ "${ADV_FIRST:-0}" = 1 ] && adversarial # the whole corpus first: a bench takes what is left
  bench level2 1 level2 "${RESUME2:-}" X=1 ${ONLY2:+BENCH_ARGS=--only=$ONLY2}
  [ "${ADV_FIRST:-0}" = 1 ] || adversarial
  local t
  t=$(left)
  if [ -n "${CONV_TUNE:-}" ] && [ "$t" -gt 60 ]; then
    mkdir -p "$W/conv_tune"
    log "GPU 1: conv tune ($CONV_TUNE), up to $t s"
    CUDA_VISIBLE_DEVICES=1 OUT=$W/conv_tune PROBLEMS=$CONV_TUNE DEADLINE_S=$((t - 5)) \
      bash benchmarks/gpu_conv_tune.sh >"$W/conv_tune/stdout.txt" 2>&1
    log "GPU 1: conv tune exit $?"
  fi
  if [ -n "${RERUN2:-}" ] && [ "$(left)" -gt 90 ]; then
    bench rerun2 1 level2 "" BENCH_ARGS="--only $RERUN2"
  fi
}

lane0 &
lane1 &
wait
log "done"
python3 - "$W/adversarial/adversarial_cuda.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:  # cut before it wrote: the log has the cases
    print("adversarial JSON unreadable:", e)
    raise SystemExit
print("adversarial:", {k: v for k, v in d.items() if not isinstance(v, (list, dict))})
PY
cat "$W"/*/summary.md >"$FINAL/summary.md" 2>/dev/null
tar czf "$FINAL/finish.tgz" -C /tmp finish
cp "$LOG" "$FINAL/finish.txt"
log "packed $(($(stat -c %s "$FINAL/finish.tgz") / 1024)) KiB"
