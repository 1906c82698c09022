#!/usr/bin/env bash
# One call on a two-GPU machine (nvidia-h200-x2), two lanes:
#   GPU 0: wall time per problem of the compiler path with the GPU to itself: `agent bench` over
#          the problems SAMPLE names (level/name, copied into .kb/sample) with one job at a time,
#          twice: cold (empty caches), then warm (a second bench directory on the same machine:
#          what the digest caches of reference outputs, baselines and drafts save).
#   GPU 1: the level-1 bench resumed from RESUME1 (a tarball whose problems to redo were taken
#          out), JOBS_PER_GPU jobs at once, until the deadline; or, with TUNE set (level/name
#          list, copied into .kb/tune), a bench over those with TUNE_ARGS (e.g. "--mode loop
#          --samples 8": the compiler draft, then the tuner).
# $OUT: walltime.tgz (both sample benches), rerun1.tgz (the level-1 bench's gpu_kernelbench.sh
# output), walltime.txt (this script's log), summary.md.
#
#   run(command="SAMPLE='level1/1_Square_matrix_multiplication_ level2/28_...'
#       RESUME1=.kb/resume/bench_level1.tgz bash benchmarks/gpu_walltime.sh",
#       carry=[".whl", ".kb"], kind="nvidia-h200-x2", timeout_s=600)
#
# Environment: DEADLINE_S [540], COLD_S [330] (the cold pass's share of GPU 0's time; the warm
# pass runs if 90 s are left), JOBS_PER_GPU [8] (GPU 1), SAMPLE, RESUME1, TUNE, TUNE_ARGS.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-540}
COLD_S=${COLD_S:-330}
JOBS=${JOBS_PER_GPU:-8}
source "$(dirname "$0")/_gpu_env.sh"
FINAL=$OUT
W=/tmp/walltime
mkdir -p "$W"
LOG=$W/walltime.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
[ -f COMMIT ] && echo "snapshot of $(cat COMMIT)" >>"$LOG"
left() { echo $((DEADLINE_S - 25 - (SECONDS - START))); }

rm -rf .kb/sample && mkdir -p .kb/sample
for p in ${SAMPLE:-}; do cp ".kb/$p.py" .kb/sample/ || log "no problem $p"; done
log "sample: $(ls .kb/sample | wc -l) problems"
rm -rf .kb/tune && mkdir -p .kb/tune
for p in ${TUNE:-}; do cp ".kb/$p.py" .kb/tune/ || log "no problem $p"; done

sample() { # sample NAME SECONDS: one bench over .kb/sample, one job at a time, on GPU 0
  mkdir -p "$W/$1"
  log "GPU 0: $1 pass, up to $2 s"
  CUDA_VISIBLE_DEVICES=0 OUT=$W/$1 KB_DIR=.kb LEVELS=sample BENCH_DIR=bench_$1 JOBS_PER_GPU=1 \
    DEADLINE_S="$2" bash benchmarks/gpu_kernelbench.sh >"$W/$1/stdout.txt" 2>&1
  log "GPU 0: $1 pass exit $?: $(grep -h 'time per problem' "$W/$1/log.txt" "$W/$1"/*.md 2>/dev/null | head -1)"
}

lane0() {
  sample cold "$COLD_S"
  [ "$(left)" -gt 90 ] && sample warm "$(left)"
}

lane1() {
  if [ -n "${TUNE:-}" ]; then
    mkdir -p "$W/rerun1"
    log "GPU 1: $(ls .kb/tune | wc -l) problems with ${TUNE_ARGS:-}, up to $(left) s"
    CUDA_VISIBLE_DEVICES=1 OUT=$W/rerun1 KB_DIR=.kb LEVELS=tune BENCH_DIR=bench_tune \
      JOBS_PER_GPU=$JOBS BENCH_ARGS="${TUNE_ARGS:-}" DEADLINE_S="$(left)" \
      bash benchmarks/gpu_kernelbench.sh >"$W/rerun1/stdout.txt" 2>&1
    log "GPU 1: tune exit $?: $(grep -h 'candidates done' "$W/rerun1/log.txt" | tail -1)"
    return
  fi
  mkdir -p "$W/rerun1"
  log "GPU 1: level1 resumed, up to $(left) s"
  CUDA_VISIBLE_DEVICES=1 OUT=$W/rerun1 LEVELS=level1 BENCH_DIR=bench_rerun1 JOBS_PER_GPU=$JOBS \
    RESUME_TGZ=${RESUME1:-} DEADLINE_S="$(left)" bash benchmarks/gpu_kernelbench.sh \
    >"$W/rerun1/stdout.txt" 2>&1
  log "GPU 1: level1 exit $?: $(grep -h 'candidates done' "$W/rerun1/log.txt" | tail -1)"
}

lane0 &
lane1 &
wait
cat "$W"/*/summary.md >"$FINAL/summary.md" 2>/dev/null
tar czf "$FINAL/walltime.tgz" -C "$W" $(cd "$W" && ls -d cold warm 2>/dev/null)
tar czf "$FINAL/rerun1.tgz" -C "$W" rerun1
cp "$LOG" "$FINAL/walltime.txt"
log "packed"
