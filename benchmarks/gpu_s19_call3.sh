#!/usr/bin/env bash
# Session 19, device call 3 (one H200, about 8.5 minutes), two lanes one after the other:
#   H. benchmarks/gpu_half_precision.sh alone (issue 36: bf16 and fp16 drafts with tensor-core
#      GEMMs and convolutions made for 2-byte operands; session 17's fp16 level1/1 at 0.06x
#      eager ran beside four other lanes), PROBLEMS 1,8,50,55, within HALF_S;
#   L. benchmarks/gpu_level3_time.sh on the level-3 networks that calls 1 and 2 never started
#      (recurrent layers, attention, Mamba2, NetVLAD, the MLP, AlexNet, GoogLeNet's module,
#      ShuffleNet's unit), fresh, 8 jobs, for the time left.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb &&
#       bash benchmarks/gpu_s19_call3.sh", carry=[".whl", ".kb", ".gpu_snap"],
#       kind="nvidia-h200", timeout_s=580)
#
# $OUT: call3.txt (this log), laneH.tgz, laneL.tgz, level3_time.md, half.txt.
set -u
START=$SECONDS
TOTAL_S=${TOTAL_S:-520}
HALF_S=${HALF_S:-240}
source "$(dirname "$0")/_gpu_env.sh"
FINAL=$OUT
LOG=$FINAL/call3.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; nvidia-smi -L; } >>"$LOG" 2>&1
mkdir -p /tmp/oH /tmp/oL
OUT=/tmp/oH PROBLEMS=${PROBLEMS:-1,8,50,55} DEADLINE_S=$HALF_S timeout $((HALF_S + 30)) \
  bash benchmarks/gpu_half_precision.sh >/tmp/oH/stdout.txt 2>&1
log "lane H rc=$?"
cp /tmp/oH/half.txt "$FINAL/" 2>/dev/null
tar czf "$FINAL/laneH.tgz" -C /tmp oH
LEFT=$((TOTAL_S - (SECONDS - START) - 10))
log "lane L with $LEFT s"
OUT=/tmp/oL DEADLINE_S=$LEFT NETS=${NETS:-"3_DeepNarrowMLP 33_VanillaRNN 34_VanillaRNNHidden
36_LSTMHn 37_LSTMCn 38_LSTMBidirectional 40_GRUHidden 41_GRUBidirectional
42_GRUBidirectionalHidden 46_NetVladWithGhostClusters 47_NetVladNoGhostClusters
49_Mamba2ReturnFinalState 50_ReLUSelfAttention 5_AlexNet 6_GoogleNetInceptionModule
25_ShuffleNetUnit"} timeout $((LEFT + 20)) bash benchmarks/gpu_level3_time.sh >/tmp/oL/stdout.txt 2>&1
log "lane L rc=$?"
cp /tmp/oL/level3_time.md "$FINAL/" 2>/dev/null
tar czf "$FINAL/laneL.tgz" -C /tmp oL
log "finished"
