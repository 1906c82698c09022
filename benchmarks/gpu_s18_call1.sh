#!/usr/bin/env bash
# Session 18, device call 1 (one H200, about 8 minutes), from a snapshot of HEAD (.gpu_snap),
# after the launch timing's device-side hold (tools/compile/launch_record.DeviceHold) and the rule back
# at 0.7x / 2 us. Two lanes side by side (at most two: docs/gpu-runbook.md):
#   lane V  benchmarks/gpu_verifier.sh (CAP_S=420, 6 jobs): the whole corpus on CUDA, Liger's
#           ops, the sanitizer pair (issue 34: 0 false accepts and 0 false rejects at one commit?)
#   lane M  benchmarks/gpu_memo_check.sh (the device memos `cheat` at 67x129x95 and 1024^3, twins,
#           the example and the spin lock `ok`), then benchmarks/gpu_output_bits.sh (issue 35's
#           low-mantissa-bit check on CUDA: honest kinds stay `ok`).
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s18_call1.sh", carry=[".whl", ".kb", ".gpu_snap"], kind="nvidia-h200",
#       timeout_s=560)
#
# $OUT: call1.txt (this log with each lane's tail) and laneV.tgz, laneM.tgz.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # installs the wheels once, before the lanes start
FINAL=$OUT
LOG=$FINAL/call1.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; nvidia-smi -L; } >>"$LOG" 2>&1
for l in V M; do mkdir -p /tmp/o$l; done
OUT=/tmp/oV CAP_S=420 ADV_JOBS_PER_GPU=6 timeout 450 bash benchmarks/gpu_verifier.sh >/tmp/oV/stdout.txt 2>&1 &
V=$!
(
  sleep 10
  OUT=/tmp/oM timeout 230 bash benchmarks/gpu_memo_check.sh
  echo "memo lane rc=$?"
  OUT=/tmp/oM timeout 240 bash benchmarks/gpu_output_bits.sh
  echo "output bits rc=$?"
) >/tmp/oM/stdout.txt 2>&1 &
M=$!
wait $M; log "lane M done"; tail -n 30 /tmp/oM/stdout.txt >>"$LOG"; cat /tmp/oM/memo_check.txt >>"$LOG" 2>/dev/null
tail -n 8 /tmp/oM/output_bits_corpus_cuda.md >>"$LOG" 2>/dev/null
wait $V; log "lane V rc=$?"; tail -n 40 /tmp/oV/stdout.txt >>"$LOG"
for l in V M; do tar czf "$FINAL/lane$l.tgz" -C /tmp "o$l"; done
log "done"
