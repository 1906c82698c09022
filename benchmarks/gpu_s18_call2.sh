#!/usr/bin/env bash
# Session 18, device call 2 (one H200, about 9 minutes), from a snapshot of HEAD (.gpu_snap),
# the commit before tools/ moves into wings (issue 37's "before"), with the launch-timing hold's
# query check (cc42a8b). One lane at a time:
#   1. benchmarks/gpu_verifier.sh (CAP_S=300, 6 jobs), ALONE on the GPU: issue 34's corpus at
#      one commit (0 false accepts and 0 false rejects?), Liger's ops, the sanitizer pair;
#   2. benchmarks/gpu_headline.sh with what is left (DEADLINE_S): issue 35's headline columns
#      (eager with cudnn.benchmark) on a recorded subset; problems not reached are named.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s18_call2.sh", carry=[".whl", ".kb", ".gpu_snap"], kind="nvidia-h200",
#       timeout_s=590)
#
# $OUT: call2.txt (this log), laneV.tgz (the corpus lane's files), and the headline's files.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
FINAL=$OUT
LOG=$FINAL/call2.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; nvidia-smi -L; } >>"$LOG" 2>&1
mkdir -p /tmp/oV /tmp/oH
OUT=/tmp/oV CAP_S=300 ADV_JOBS_PER_GPU=6 timeout 320 bash benchmarks/gpu_verifier.sh >/tmp/oV/stdout.txt 2>&1
log "lane V rc=$?"; tail -n 12 /tmp/oV/stdout.txt >>"$LOG"
grep -v "^ok " /tmp/oV/adversarial_cuda.log >>"$LOG" 2>/dev/null
tar czf "$FINAL/laneV.tgz" -C /tmp oV
LEFT=$((560 - (SECONDS - START)))
log "headline with DEADLINE_S=$LEFT"
if [ "$LEFT" -gt 120 ]; then
  OUT=$FINAL DEADLINE_S=$LEFT KB_DIR=.kb/kb timeout $((LEFT + 10)) bash benchmarks/gpu_headline.sh >/tmp/oH/stdout.txt 2>&1
  log "headline rc=$?"; tail -n 30 "$FINAL/headline.md" >>"$LOG" 2>/dev/null
fi
log "done"
