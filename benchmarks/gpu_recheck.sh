#!/usr/bin/env bash
# A short call on a two-GPU machine (nvidia-h200-x2) after changes to the verifier and the loop:
#   GPU 0: `agent bench` (compiler, sample mode, JOBS_PER_GPU jobs) over the problems RERUN
#          names (level/name, copied into .kb/rerun): problems whose recorded verdict came from
#          older code.
#   GPU 1: the adversarial corpus on CUDA (benchmarks/adversarial_figures.py, up to ADV_S), then
#          `agent bench --mode loop LOOP_ARGS` over the problems LOOP names (.kb/loop).
# $OUT: recheck.tgz (everything), recheck.txt (this script's log), summary.md.
#
#   run(command="RERUN='level1/1_Square_matrix_multiplication_ ...' LOOP='level2/14_...'
#       bash benchmarks/gpu_recheck.sh", carry=[".whl", ".kb"], kind="nvidia-h200-x2")
#
# Environment: DEADLINE_S [300], JOBS_PER_GPU [8], ADV_S [120], RERUN, LOOP,
# LOOP_ARGS ["--samples 2 --no-tune"].
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-300}
JOBS=${JOBS_PER_GPU:-8}
ADV_S=${ADV_S:-120}
source "$(dirname "$0")/_gpu_env.sh"
FINAL=$OUT
W=/tmp/recheck
mkdir -p "$W"
LOG=$W/recheck.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
[ -f COMMIT ] && echo "snapshot of $(cat COMMIT)" >>"$LOG"
left() { echo $((DEADLINE_S - 20 - (SECONDS - START))); }

subset() { # subset DIR LIST: copy the named problems into .kb/DIR
  rm -rf ".kb/$1" && mkdir -p ".kb/$1"
  for p in $2; do cp ".kb/$p.py" ".kb/$1/" || log "no problem $p"; done
}
subset rerun "${RERUN:-}"
subset loop "${LOOP:-}"

bench() { # bench NAME GPU LEVELDIR [BENCH_ARGS]
  mkdir -p "$W/$1"
  log "GPU $2: $1 ($(ls ".kb/$3" | wc -l) problems), up to $(left) s"
  CUDA_VISIBLE_DEVICES=$2 OUT=$W/$1 KB_DIR=.kb LEVELS=$3 BENCH_DIR=bench_$1 JOBS_PER_GPU=$JOBS \
    BENCH_ARGS="${4:-}" DEADLINE_S="$(left)" bash benchmarks/gpu_kernelbench.sh \
    >"$W/$1/stdout.txt" 2>&1
  log "GPU $2: $1 exit $?: $(grep -h 'candidates done' "$W/$1/log.txt" | tail -1)"
}

lane0() { [ -n "${RERUN:-}" ] && bench rerun 0 rerun; }

lane1() {
  mkdir -p "$W/adversarial"
  log "GPU 1: adversarial corpus on CUDA, up to $ADV_S s"
  CUDA_VISIBLE_DEVICES=1 ADV_JOBS_PER_GPU=4 timeout "$ADV_S" python3 benchmarks/adversarial_figures.py \
    --device cuda --json --no-write >"$W/adversarial/adversarial_cuda.json" \
    2>"$W/adversarial/adversarial_cuda.log"
  log "GPU 1: adversarial exit $?"
  python3 - "$W/adversarial/adversarial_cuda.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:  # cut before it wrote: the log has the cases
    print("adversarial JSON unreadable:", e)
    raise SystemExit
print("adversarial:", {k: v for k, v in d.items() if not isinstance(v, (list, dict))})
PY
  [ -n "${LOOP:-}" ] && bench loop 1 loop "--mode loop ${LOOP_ARGS:---samples 2 --no-tune}"
}

lane0 &
lane1 &
wait
cat "$W"/*/summary.md >"$FINAL/summary.md" 2>/dev/null
tar czf "$FINAL/recheck.tgz" -C /tmp recheck
cp "$LOG" "$FINAL/recheck.txt"
log "packed"
