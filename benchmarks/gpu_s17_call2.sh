#!/usr/bin/env bash
# Session 17, device call 2 (one H200, about 9.5 minutes), from a snapshot of HEAD (.gpu_snap).
# Side by side on the one GPU and its 16 cores (times are not records: every lane shares it):
#   lane L  benchmarks/gpu_level3_time.sh: 16 level-3 networks, 8 jobs, a 500 s deadline (issue 33);
#   lane P  benchmarks/gpu_precision_check.sh: bf16 and fp16 benches on level-1 problems (issue 36);
#   lane K  benchmarks/gpu_kb_agreement.sh: KernelBench's judge on our exports, both reference
#           settings (issue 36);
#   lane M  benchmarks/gpu_memo_check.sh: the device memos and their honest twins (issue 34);
#   lane V  benchmarks/gpu_verifier.sh (CAP_S=400, 4 jobs): the whole corpus on CUDA with the
#           per-launch device-time rule in (no false rejects?).
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s17_call2.sh", carry=[".whl", ".kb", ".gpu_snap"], kind="nvidia-h200",
#       timeout_s=600)
#
# $OUT: call2.txt (this log with each lane's tail) and laneL/P/K/M/V.tgz.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # installs the wheels once, before the lanes start
FINAL=$OUT
LOG=$FINAL/call2.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; nvidia-smi -L; } >>"$LOG" 2>&1
for l in L P K M V; do mkdir -p /tmp/o$l; done
OUT=/tmp/oL DEADLINE_S=500 timeout 560 bash benchmarks/gpu_level3_time.sh >/tmp/oL/stdout.txt 2>&1 &
L=$!
(sleep 20; OUT=/tmp/oM timeout 240 bash benchmarks/gpu_memo_check.sh) >/tmp/oM/stdout.txt 2>&1 &
M=$!
(sleep 10; OUT=/tmp/oP timeout 300 bash benchmarks/gpu_precision_check.sh) >/tmp/oP/stdout.txt 2>&1 &
P=$!
(sleep 30; OUT=/tmp/oK timeout 330 bash benchmarks/gpu_kb_agreement.sh) >/tmp/oK/stdout.txt 2>&1 &
K=$!
(sleep 40; OUT=/tmp/oV CAP_S=400 ADV_JOBS_PER_GPU=4 timeout 520 bash benchmarks/gpu_verifier.sh) >/tmp/oV/stdout.txt 2>&1 &
V=$!
wait $M; log "lane M rc=$?"; tail -n 40 /tmp/oM/stdout.txt >>"$LOG"
wait $P; log "lane P rc=$?"; tail -n 40 /tmp/oP/stdout.txt >>"$LOG"
wait $K; log "lane K rc=$?"; tail -n 40 /tmp/oK/stdout.txt >>"$LOG"
wait $V; log "lane V rc=$?"; tail -n 30 /tmp/oV/stdout.txt >>"$LOG"
wait $L; log "lane L rc=$?"; tail -n 60 /tmp/oL/stdout.txt >>"$LOG"
for l in L P K M V; do tar czf "$FINAL/lane$l.tgz" -C /tmp "o$l"; done
ls -la "$FINAL" >>"$LOG"
log "done"
