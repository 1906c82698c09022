#!/usr/bin/env bash
# Session 18, device call 3 (one H200, about 8 minutes): issue 37's "same verdicts before and
# after" on a sample. .gpu_snap is the snapshot of HEAD after tools/ moved into wings and the
# long modules and functions were split; .gpu_before the snapshot of b3bdd3e (before the wings;
# call 2 ran the corpus from it: 185 kinds, 0 false accepts, 0 wrong statuses). One lane at a time:
#   1. benchmarks/gpu_verifier.sh (CAP_S=240, 6 jobs) alone: the corpus after the redesign;
#   2. benchmarks/gpu_verify_cost.py --before .gpu_before --after . : the six examples and five
#      KernelBench problems at their published sizes with session 13's candidates (.kb/cost),
#      each verified by both trees at the same time: their statuses side by side (and the cost);
#      beside it, bounded by the same deadline: benchmarks/gpu_conv_families.sh (the split
#      convolution families' CUDA tests) and benchmarks/gpu_one_timer.sh (the one Timer's modes).
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && ln -sfn
#       ../.gpu_before .gpu_before && bash benchmarks/gpu_s18_call3.sh",
#       carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"], kind="nvidia-h200", timeout_s=560)
#
# $OUT: call3.txt (this log), laneV.tgz (the corpus lane's files), verify_cost.json,
# laneC.tgz and laneT.tgz (the two scripts' files).
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
FINAL=$OUT
LOG=$FINAL/call3.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot), before: $(cat .gpu_before/COMMIT)"; nvidia-smi -L; } >>"$LOG" 2>&1
mkdir -p /tmp/oV
OUT=/tmp/oV CAP_S=240 ADV_JOBS_PER_GPU=6 timeout 260 bash benchmarks/gpu_verifier.sh >/tmp/oV/stdout.txt 2>&1
log "lane V rc=$?"; tail -n 12 /tmp/oV/stdout.txt >>"$LOG"
grep -v "^ok " /tmp/oV/adversarial_cuda.log >>"$LOG" 2>/dev/null
tar czf "$FINAL/laneV.tgz" -C /tmp oV
LEFT=$((520 - (SECONDS - START)))
log "before/after verdicts with $LEFT s left; the conv families and the timer beside them"
mkdir -p /tmp/oC /tmp/oT
(OUT=/tmp/oC timeout "$LEFT" bash benchmarks/gpu_conv_families.sh >/tmp/oC/stdout.txt 2>&1) &
C=$!
(OUT=/tmp/oT timeout "$LEFT" bash benchmarks/gpu_one_timer.sh >/tmp/oT/stdout.txt 2>&1) &
T=$!
timeout "$LEFT" python3 benchmarks/gpu_verify_cost.py --before .gpu_before --after . --kb .kb/cost \
  --trials 5 --timeout 120 --out "$FINAL/verify_cost.json" >>"$LOG" 2>&1
log "verify cost rc=$?"
wait $C; log "conv families rc=$?"; tail -n 6 /tmp/oC/triton_conv_gpu.txt >>"$LOG" 2>/dev/null
wait $T; log "one timer rc=$?"; cat /tmp/oT/one_timer.txt >>"$LOG" 2>/dev/null
tar czf "$FINAL/laneC.tgz" -C /tmp oC
tar czf "$FINAL/laneT.tgz" -C /tmp oT
log "done"
