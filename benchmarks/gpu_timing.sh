#!/usr/bin/env bash
# The timing half of gpu_all.sh alone, for a two-GPU machine (nvidia-h200-x2), under 9 minutes:
# GPU 0 profiles the examples (ReLU 8192x8192 five times for repeatability) and runs the
# GPU-marked profiler tests; GPU 1 runs the compiler drafter and the tuner over five examples,
# then the throughput benchmark (runner vs one subprocess per candidate).
#     bash benchmarks/gpu_timing.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 320 python3 benchmarks/compiler_examples.py --problems examples/problems/{relu,softmax,layernorm,matmul,linear_gelu}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples.json" 2>&1 | grep -v Warning
  timeout 200 python3 benchmarks/throughput.py --n 12 --timeout 20 --skip-parallel-naive --jobs-per-gpu 4 \
    --record "$OUT/throughput_h200.md" 2>&1 | grep -v Warning | tail -20
  echo "gpu1 done"
}
gpu1 > "$OUT/gpu1.log" 2>&1 &
{
  export CUDA_VISIBLE_DEVICES=0
  PROFILE_LARGE=relu PROFILE_ONLY=relu,matmul,layernorm,linear_gelu PROFILE_DEADLINE_S=170 \
    timeout 240 python3 benchmarks/profile_examples.py 2>&1 | tail -30
  timeout 80 python3 -m pytest -v -m gpu -p no:cacheprovider tests/test_profile.py 2>&1 | tail -8
} 2>&1 | tee "$OUT/run.log"
wait
cat "$OUT/gpu1.log"
