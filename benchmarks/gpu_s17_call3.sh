#!/usr/bin/env bash
# Session 17, device call 3 (one H200, about 5 minutes), from a snapshot of HEAD (.gpu_snap), after
# the fixes that call 2 asked for. Side by side:
#   lane V  benchmarks/gpu_verifier.sh (CAP_S=270, 6 jobs): the whole corpus on CUDA;
#   lane M  benchmarks/gpu_memo_check.sh: the device memos at both sizes, their twins;
#   lane F  benchmarks/gpu_fp32_rule_check.sh: the fp32 rule on honest GEMMs, level2/14, the
#           arithmetic check and the memo twins at x100;
#   lane R  benchmarks/gpu_repeat_ratio.sh: eager's repeated/fresh ratio, and level1/50 at fp16
#           (a false `cheat` in call 2) with the repeat check judged against eager's ratio.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s17_call3.sh", carry=[".whl", ".kb", ".gpu_snap"], kind="nvidia-h200",
#       timeout_s=330)
#
# $OUT: call3.txt (this log with each lane's tail) and laneV/M/F/R.tgz.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # installs the wheels once, before the lanes start
FINAL=$OUT
LOG=$FINAL/call3.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; nvidia-smi -L; } >>"$LOG" 2>&1
for l in V M F R; do mkdir -p /tmp/o$l; done
OUT=/tmp/oV CAP_S=270 ADV_JOBS_PER_GPU=6 timeout 300 bash benchmarks/gpu_verifier.sh >/tmp/oV/stdout.txt 2>&1 &
V=$!
(OUT=/tmp/oF KB_DIR=.kb/kb timeout 300 bash benchmarks/gpu_fp32_rule_check.sh) >/tmp/oF/stdout.txt 2>&1 &
F=$!
(sleep 15; OUT=/tmp/oM timeout 200 bash benchmarks/gpu_memo_check.sh) >/tmp/oM/stdout.txt 2>&1 &
M=$!
(sleep 25; OUT=/tmp/oR timeout 280 bash benchmarks/gpu_repeat_ratio.sh) >/tmp/oR/stdout.txt 2>&1 &
R=$!
wait $M; log "lane M rc=$?"; tail -n 30 /tmp/oM/stdout.txt >>"$LOG"
wait $F; log "lane F rc=$?"; cat /tmp/oF/fp32_rule_check.txt >>"$LOG" 2>/dev/null
wait $R; log "lane R rc=$?"; tail -n 30 /tmp/oR/stdout.txt >>"$LOG"
wait $V; log "lane V rc=$?"; tail -n 30 /tmp/oV/stdout.txt >>"$LOG"
for l in V M F R; do tar czf "$FINAL/lane$l.tgz" -C /tmp "o$l"; done
log "done"
