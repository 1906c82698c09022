#!/usr/bin/env bash
# Two-minute check of the timing method on nvidia-h200-x2: GPU 0 profiles ReLU 8192x8192 five
# times (repeatability) and the tiny ReLU example; GPU 1 runs the GPU-marked profiler tests
# (side streams, cached output). Writes profile_h200.{json,md} and pytest_profile.txt to $OUT.
set -u
source "$(dirname "$0")/_gpu_env.sh"
(CUDA_VISIBLE_DEVICES=1 timeout 120 python3 -m pytest -v --no-header -m gpu -p no:cacheprovider tests/test_profile.py \
  > "$OUT/pytest_profile.txt" 2>&1) &
CUDA_VISIBLE_DEVICES=0 PROFILE_LARGE=relu PROFILE_ONLY=relu PROFILE_DEADLINE_S=95 \
  timeout 125 python3 benchmarks/profile_examples.py 2>&1 | tail -14
wait
tail -8 "$OUT/pytest_profile.txt"
