#!/usr/bin/env bash
# The timing half of gpu_all.sh, for a two-GPU machine (nvidia-h200-x2), under 9 minutes. One
# call records what issues 4, 5 and 7 need with the current timer:
#   GPU 0: every example profiled (eager, torch.compile, candidate, roofline), ReLU 8192x8192
#          five times for repeatability, the GPU-marked profiler tests, then the compiler drafter
#          and tuner over four examples;
#   GPU 1: the compiler drafter and tuner over the other five examples, then the throughput
#          benchmark (runner with 4 verification jobs per GPU vs one subprocess per candidate).
#     bash benchmarks/gpu_timing.sh
# Writes 7 files to $OUT.
set -u
source "$(dirname "$0")/_gpu_env.sh"
gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 290 python3 benchmarks/compiler_examples.py --problems examples/problems/{relu,softmax,layernorm,matmul,linear_gelu}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples.json" 2>&1 | grep -v Warning
  timeout 200 python3 benchmarks/throughput.py --n 12 --timeout 20 --skip-parallel-naive --jobs-per-gpu 4 \
    --record "$OUT/throughput_h200.md" 2>&1 | grep -v Warning | tail -20
  echo "gpu1 done"
}
gpu1 > "$OUT/gpu1.log" 2>&1 &
{
  export CUDA_VISIBLE_DEVICES=0
  PROFILE_LARGE=relu PROFILE_DEADLINE_S=200 timeout 260 python3 benchmarks/profile_examples.py 2>&1 | tail -30
  timeout 70 python3 -m pytest -v --no-header -m gpu -p no:cacheprovider tests/test_profile.py 2>&1 | tail -8
  timeout 170 python3 benchmarks/compiler_examples.py --problems examples/problems/{mse_loss,multi_io,scale_add_bias,sum_reduction}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples_2.json" 2>&1 | grep -v Warning
} 2>&1 | tee "$OUT/run.log"
wait
cat "$OUT/gpu1.log"
