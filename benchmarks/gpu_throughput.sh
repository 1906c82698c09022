#!/usr/bin/env bash
# The throughput benchmark alone on a two-GPU machine (nvidia-h200-x2), ~5 minutes: the runner
# (4 verification jobs per GPU, one exclusive timing job per GPU) vs one subprocess per
# candidate, sequential and spread over both GPUs. Writes throughput_h200x2.md and the log to $OUT.
#     bash benchmarks/gpu_throughput.sh
set -u
source "$(dirname "$0")/_gpu_env.sh"
export CUDA_VISIBLE_DEVICES=0,1
timeout 400 python3 benchmarks/throughput.py --n 24 --timeout 20 --jobs-per-gpu 4 \
  --record throughput_h200x2.md --json 2>&1 | grep -v Warning | tee "$OUT/throughput.log" | tail -25
cp throughput_h200x2.md "$OUT/"
