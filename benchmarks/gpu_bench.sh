#!/usr/bin/env bash
# `agent bench` over the examples on a two-GPU machine (nvidia-h200-x2), ~5 minutes, one run
# after the other (two processes must not time on the same GPU at once):
#   1. replay backend: 4 candidates per problem from the example kernels, good and broken
#      (benchmarks/replay_examples.py): pass@k, fast_p, statuses, speedups;
#   2. compiler backend: torch.compile's Triton as the one candidate per problem.
#     bash benchmarks/gpu_bench.sh
# Writes the two bench output directories (reports, plots, every candidate and verdict) to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache CUDA_VISIBLE_DEVICES=0,1
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 benchmarks/replay_examples.py --samples 4 --out "$OUT/replies.jsonl"
timeout 220 python3 -m agent bench examples/problems --backend replay --replies "$OUT/replies.jsonl" \
  --samples 4 --k 1,2,4 --jobs-per-gpu 4 --timeout 20 --out "$OUT/bench_replay" 2>&1 | grep -v Warning | tail -45
timeout 200 python3 -m agent bench examples/problems --backend compiler --samples 1 --k 1 \
  --jobs-per-gpu 4 --out "$OUT/bench_compiler" 2>&1 | grep -v Warning | tail -20
