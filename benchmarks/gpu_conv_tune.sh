#!/usr/bin/env bash
# Issue 15, convolutions: this project's Triton convolutions (tools/kernels/triton_conv.py) against cuDNN
# on KernelBench level-1 convolution problems at their published sizes, over a small sweep of
# tiles (tools.compile.tune.CONV_TILES) and tl.dot input precisions (tf32x3, bf16x3, tf32, ieee), each
# checked in-process against an fp64 convolution (max abs error; all-close at 1e-4 and 1e-2).
# cuDNN is timed with PyTorch's default TF32 and with TF32 off. benchmarks/conv_tune.py does one
# problem; each runs in its own process under `timeout`, so a crash or a hang costs one problem.
#
#   run(command="bash benchmarks/gpu_conv_tune.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=300)
#
# Environment (defaults in brackets):
#   DEADLINE_S [235]  the script ends by then; no problem starts with less than 20 s left
#   CAP_S [22]        seconds a problem (its process is killed at CAP_S + 12)
#   PROBLEMS ["67 57 81 55 54 72 82 87"]  level-1 numbers, in this order: 1D, transposed 2D,
#                     strided transposed 2D (phased), standard 2D, 3D with 3 input channels (the
#                     flat reduction), grouped strided transposed 3D, depthwise, pointwise
#   KB_DIR [.kb]      KernelBench copy (`cp -r ../shared/kernelbench .kb`)
#   DEVICE [cuda]     cpu: the plumbing under the Triton interpreter at tiny sizes
# $OUT gets: conv_tune.md (the table: every config a row, then the best at each tolerance),
# conv_tune.jsonl (the same rows as JSON), log.txt, env.txt.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-235}
CAP_S=${CAP_S:-22}
PROBLEMS=${PROBLEMS:-"67 57 81 55 54 72 82 87"}
KB_DIR=${KB_DIR:-.kb}
DEVICE=${DEVICE:-cuda}
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
TABLE=$OUT/conv_tune.md
: >"$LOG"
: >"$OUT/conv_tune.jsonl"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
left() { echo $((DEADLINE_S - (SECONDS - START))); }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
"cudnn", torch.backends.cudnn.version())' 2>&1
  echo "DEADLINE_S=$DEADLINE_S CAP_S=$CAP_S PROBLEMS=$PROBLEMS DEVICE=$DEVICE"
} >"$OUT/env.txt" 2>&1

{
  echo "fp32 inputs at the published sizes; ms = triton.testing.do_bench median (warmup 5 ms, rep 40 ms);"
  echo "x eager TF32 / fp32 = cuDNN's time (TF32 on: PyTorch's default / off) over the kernel's;"
  echo "ok = every element within atol + rtol * |ref| of an fp64 convolution (atol = rtol)."
  echo
} >"$TABLE"
python3 benchmarks/conv_tune.py --header --out "$TABLE"

for n in $PROBLEMS; do
  problem=$(ls "$KB_DIR"/level1/"${n}"_*.py 2>/dev/null | head -1)
  if [ -z "$problem" ]; then
    log "$n: no problem file in $KB_DIR/level1"
    continue
  fi
  if [ "$(left)" -lt 20 ]; then
    log "$n: skipped, $(left) s left"
    echo "| $(basename "$problem" .py) | | skipped (time) | | | | | | | | |" >>"$TABLE"
    continue
  fi
  cap=$CAP_S
  [ "$cap" -gt $(($(left) - 12)) ] && cap=$(($(left) - 12))
  timeout -k 5 $((cap + 12)) python3 benchmarks/conv_tune.py --problem "$problem" --cap "$cap" \
    --device "$DEVICE" --out "$TABLE" --jsonl "$OUT/conv_tune.jsonl" >>"$LOG" 2>&1
  rc=$?
  [ $rc -ne 0 ] && echo "| $(basename "$problem" .py) | | exit $rc (see log.txt) | | | | | | | | |" >>"$TABLE"
  log "$(basename "$problem" .py): rc=$rc"
done
log "done"
grep -E "best at|cuDNN|exit|skipped" "$TABLE" | tee -a "$LOG"
