#!/usr/bin/env bash
# Several GPU scripts in one device call on a two-GPU machine (nvidia-h200-x2): two lanes, one a
# GPU, each running its scripts one after the other (timings of one lane never share a GPU with
# the other lane's). Each script gets $OUT of its own (/tmp/lanes/<name>/) and a time limit; all
# of it comes back as one file, $OUT/lanes.tgz, with lanes.txt (what ran, exit codes, seconds).
#
#   run(command="bash benchmarks/gpu_lanes.sh", carry=[".whl", ".kb"], kind="nvidia-h200-x2")
#
# Environment (defaults in brackets):
#   LANE0 ["gpu_verifier.sh leaky gpu_conv.sh"]  scripts of benchmarks/ on GPU 0, in order;
#   LANE1 ["gpu_gemm.sh gpu_protocols.sh"]       the same on GPU 1;
#         `leaky` = gpu_realsize.sh's 6.4 GB problem only (verify, profile under both protocols);
#   STEP_S [240]  limit of one script; DEADLINE_S [450]  no script starts after DEADLINE_S - 60 s,
#                 and a running one is stopped at DEADLINE_S.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # wheels installed once, here, before the lanes start
FINAL=$OUT
W=/tmp/lanes
mkdir -p "$W"
LOG=$W/lanes.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
LANE0=${LANE0:-"gpu_verifier.sh leaky gpu_conv.sh"}
LANE1=${LANE1:-"gpu_gemm.sh gpu_protocols.sh"}
STEP_S=${STEP_S:-240}
DEADLINE_S=${DEADLINE_S:-450}
# a git-archive snapshot (.gpu_snap) has no .git of its own: its COMMIT file says what it is
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
[ -f COMMIT ] && echo "snapshot of $(cat COMMIT)" >>"$LOG"

lane() { # lane GPU SCRIPT...
  local gpu=$1 s name dir left rc t0
  shift
  for s in "$@"; do
    left=$((DEADLINE_S - (SECONDS - START)))
    if [ "$left" -lt 60 ]; then
      log "GPU $gpu: $s not started ($left s left)"
      continue
    fi
    [ "$left" -gt "$STEP_S" ] && left=$STEP_S
    name=${s%.sh}
    dir=$W/$name
    mkdir -p "$dir"
    log "GPU $gpu: $s, up to $left s"
    t0=$SECONDS
    if [ "$s" = leaky ]; then
      CUDA_VISIBLE_DEVICES=$gpu OUT=$dir SKIP_EXAMPLES=1 SKIP_ADVERSARIAL=1 TOTAL_S=0 \
        timeout --signal=INT --kill-after=15 "$left" bash benchmarks/gpu_realsize.sh >"$dir/stdout.txt" 2>&1
      rc=$?
      cp -r /tmp/realsize/. "$dir/" 2>/dev/null
    else
      CUDA_VISIBLE_DEVICES=$gpu OUT=$dir \
        timeout --signal=INT --kill-after=15 "$left" bash "benchmarks/$s" >"$dir/stdout.txt" 2>&1
      rc=$?
    fi
    log "GPU $gpu: $s exit $rc after $((SECONDS - t0)) s"
  done
}

read -r -a lane0 <<<"$LANE0"
read -r -a lane1 <<<"$LANE1"
lane 0 "${lane0[@]}" &
lane 1 "${lane1[@]}" &
wait
log "done"
tar czf "$FINAL/lanes.tgz" -C /tmp lanes
cp "$LOG" "$FINAL/lanes.txt"
