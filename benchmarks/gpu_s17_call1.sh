#!/usr/bin/env bash
# Session 17, device call 1 (one H200, about 9.5 minutes), from a snapshot of HEAD (.gpu_snap),
# with session 13's verifier (cf2ab9c) in ../.gpu_before. The checks session 16 wrote and could
# not run (docs/gpu-runbook.md, "what waits"), side by side on the one GPU:
#   lane A  benchmarks/gpu_memreg_check.sh: the 6.4 GB level1/20 crash and the 5.4x cost on
#           level1/82 (and 35), after their fixes;
#   lane B  benchmarks/gpu_verifier.sh (CAP_S=420, 6 jobs): the corpus on CUDA after the precision
#           floor, Liger's honest ops, the sanitizer pair;
#   lane C  gpu_scales_check.py, allowance_calibration.py, gpu_arithmetic.py, gpu_fp64_rule.sh
#           (ROUNDS='1 2'), one after another.
# Everything shares the GPU and its 16 cores: cost figures are ratios of pairs run at once.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s17_call1.sh", carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"],
#       kind="nvidia-h200", timeout_s=600)
#
# $OUT: call1.txt (this log, each lane's tail) and laneA.tgz, laneB.tgz, laneC.tgz.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # installs the wheels once, before the lanes start
FINAL=$OUT
LOG=$FINAL/call1.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; [ -f ../.gpu_before/COMMIT ] &&
  echo "before: $(cat ../.gpu_before/COMMIT)"; nvidia-smi -L; } >>"$LOG" 2>&1
mkdir -p /tmp/oA /tmp/oB /tmp/oC

OUT=/tmp/oA timeout 545 bash benchmarks/gpu_memreg_check.sh >/tmp/oA/stdout.txt 2>&1 &
A=$!
OUT=/tmp/oB CAP_S=420 ADV_JOBS_PER_GPU=6 timeout 545 bash benchmarks/gpu_verifier.sh \
  >/tmp/oB/stdout.txt 2>&1 &
B=$!
(
  export OUT=/tmp/oC
  c() { echo "[$((SECONDS - START)) s] $*"; }
  c "scales check"; timeout 200 python3 benchmarks/gpu_scales_check.py --device cuda --out /tmp/oC; c "rc=$?"
  c "allowance calibration"; timeout 120 python3 benchmarks/allowance_calibration.py --device cuda \
    --out /tmp/oC/allowance_calibration.md; c "rc=$?"
  c "arithmetic"; timeout 120 python3 benchmarks/gpu_arithmetic.py; c "rc=$?"
  c "fp64 rule"; ROUNDS='1 2' KB_DIR=.kb/kb timeout 130 bash benchmarks/gpu_fp64_rule.sh; c "rc=$?"
) >/tmp/oC/stdout.txt 2>&1 &
C=$!

wait $C; log "lane C done"; tail -n 30 /tmp/oC/stdout.txt >>"$LOG"
wait $A; log "lane A done"; cat /tmp/oA/memreg.txt >>"$LOG" 2>/dev/null
wait $B; log "lane B done"; tail -n 30 /tmp/oB/stdout.txt >>"$LOG"
for l in A B C; do tar czf "$FINAL/lane$l.tgz" -C /tmp "o$l"; done
ls -la "$FINAL" >>"$LOG"
log "done"
