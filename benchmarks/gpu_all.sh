#!/usr/bin/env bash
# The consolidated GPU job for a two-GPU machine (device kind nvidia-h200-x2), under 10 minutes.
# Run from the repo root with the wheels of the agent's dependencies in .whl/ (see
# docs/gpu-runbook.md):
#     bash benchmarks/gpu_all.sh
# GPU 0 does the timing, one job at a time (profiles, the tuner); GPU 1 does everything that only
# verifies (adversarial corpus, GPU-marked tests, dataset build, throughput). Writes 7 files to
# $OUT; the lead copies them into benchmarks/results/gpu/<date>/.
set -u
source "$(dirname "$0")/_gpu_env.sh"
mkdir -p /tmp/ds /tmp/prof
nvidia-smi -L
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(), torch.cuda.device_count(), 'GPUs')"
# Safety check of the forkserver's torch._dynamo preload: without it if one verify fails.
if ! CUDA_VISIBLE_DEVICES=1 timeout 60 python3 -m agent verify examples/problems/relu.py examples/kernels/relu.py --trials 2 --device cuda; then
  echo "verify failed with the GPU preload: TRITON_AGENT_GPU_PRELOAD=0 from here on"; export TRITON_AGENT_GPU_PRELOAD=0
fi

gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  (ADV_JOBS_PER_GPU=4 timeout 200 python3 benchmarks/adversarial_figures.py --device cuda --timeout 20 --trials 3 --no-write --json \
     > "$OUT/a_adversarial.txt" 2>&1) &
  (timeout 280 python3 -m pytest -v --no-header -m gpu -p no:cacheprovider tests/test_verify.py tests/test_aot.py > /tmp/pt1.txt 2>&1; echo "pytest rc=$?" >> /tmp/pt1.txt) &
  (timeout 280 python3 -m pytest -v --no-header -m gpu -p no:cacheprovider tests/test_inductor_draft.py > /tmp/pt2.txt 2>&1; echo "pytest rc=$?" >> /tmp/pt2.txt) &
  (timeout 280 python3 -m agent dataset build examples/problems --out /tmp/ds/pairs.jsonl --profile off > /tmp/ds.txt 2>&1; echo "dataset rc=$?" >> /tmp/ds.txt; cp /tmp/ds/pairs.jsonl "$OUT/pairs.jsonl") &
  wait
  cat /tmp/pt1.txt /tmp/pt2.txt > "$OUT/a_pytest_gpu.txt"
  tail -4 /tmp/pt1.txt; tail -4 /tmp/pt2.txt; cat /tmp/ds.txt; tail -c 300 "$OUT/a_adversarial.txt"; echo
  timeout 250 python3 benchmarks/throughput.py --n 12 --timeout 20 --skip-parallel-naive 2>&1
  echo "gpu1 done"
}

gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  OUT=/tmp/prof PROFILE_LARGE=relu PROFILE_DEADLINE_S=200 timeout 260 python3 benchmarks/profile_examples.py 2>&1 | tail -32
  cp /tmp/prof/profile_h200.json "$OUT/profile_h200.json"
  timeout 100 python3 -m pytest -v --no-header -m gpu -p no:cacheprovider tests/test_profile.py 2>&1 | tail -8
  timeout 190 python3 benchmarks/compiler_examples.py --problems examples/problems/{relu,softmax,layernorm,matmul,linear_gelu}.py \
    --tune-trials 3 --trials 2 --out "$OUT/compiler_examples.json" 2>&1 | tail -12
  echo "gpu0 done"
}

gpu1 > "$OUT/gpu1.log" 2>&1 &
gpu0 2>&1 | tee "$OUT/run.log"
wait
cat "$OUT/gpu1.log"
ls -la "$OUT"
