#!/usr/bin/env bash
# The consolidated GPU job (one lease; at most ~9 minutes, so it fits one 10-minute device
# command). Run from the repo root on the GPU machine with the wheels of the agent's
# dependencies carried in .whl/ (see the device tool's README):
#     bash benchmarks/gpu_all.sh
# Writes at most 8 files to $OUT; the lead copies them into benchmarks/results/gpu/.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT" /tmp/ds
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"

# Phase A: verification only (no timing), in parallel: correctness needs no exclusive GPU.
(timeout 180 python3 benchmarks/verify_examples.py --device cuda --trials 3 --timeout 20 --jobs-per-gpu 4 \
   > "$OUT/a_verify_examples.txt" 2>&1) &
(ADV_JOBS_PER_GPU=4 timeout 180 python3 benchmarks/adversarial_figures.py --device cuda --timeout 20 --trials 3 --no-write --json \
   > "$OUT/a_adversarial.txt" 2>&1) &
(timeout 180 python3 -m agent dataset build examples/problems --out /tmp/ds/pairs.jsonl --profile off --json \
   > "$OUT/a_dataset.txt" 2>&1; cp /tmp/ds/pairs.jsonl "$OUT/pairs.jsonl") &
wait
echo "phase A done"

# Phase B: timing, one job at a time on the GPU. The deadline only stops *starting* profiles and
# the table is written at the end, so the timeout leaves room for one more profile (the
# torch.compile baseline now compiles for real: tens of seconds the first time per problem).
PROFILE_LARGE=relu PROFILE_ONLY=softmax,layernorm,matmul PROFILE_DEADLINE_S=130 \
  timeout 240 python3 benchmarks/profile_examples.py > /tmp/profile_stdout.txt 2>&1
tail -40 /tmp/profile_stdout.txt
timeout 80 python3 benchmarks/compiler_examples.py --problems examples/problems/softmax.py \
  --tune-trials 3 --trials 2 --out "$OUT/compiler_examples.json" > /tmp/b_compiler.txt 2>&1
tail -15 /tmp/b_compiler.txt
ls -la "$OUT"
