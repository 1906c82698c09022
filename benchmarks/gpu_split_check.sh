#!/usr/bin/env bash
# Issue 37 on a GPU (nvidia-h200, under 10 minutes, no wheels needed):
#     run(command="bash benchmarks/gpu_split_check.sh", timeout_s=600)
# The functions split into named steps in session 16 whose GPU paths the CPU cannot run: the
# timing job (tools/job/profile_worker.py `profile_job`, tools/orchestrate/profile.py) through the profile tests
# that time kernels; the candidate's job on a GPU (tools/job/worker.py `candidate_job`: CUDA warm-up,
# CUDA IPC hand-over, a CUDA fault as a crash) through the verification and isolation tests; the
# convolution launchers (tools/kernels/triton_conv.py: autotuned GEMM, split GEMM, direct kernels) through
# the convolution tests against torch. Each group has its own time limit; every line of pytest's
# summary goes to $OUT/split_check.txt, with each group's exit code (0: passed).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
run_group() { # name, seconds, pytest arguments...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" python3 -m pytest -q -p no:cacheprovider -n 0 -rs "$@"
  echo "== $name: rc=$? in $((SECONDS - start)) s"
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
  run_group "profile (profile_job)" 150 tests/test_profile.py tests/test_profile_memory.py -k gpu
  run_group "verify on the GPU (candidate_job)" 170 tests/test_verify.py -m gpu
  run_group "isolation (candidate_job, drop_privileges)" 110 tests/test_isolation.py
  run_group "convolutions (triton_convolution)" 130 tests/test_triton_conv.py -m gpu -x
} 2>&1 | tee "$OUT/split_check.txt"
