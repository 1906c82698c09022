# Set-up shared by the GPU scripts (benchmarks/gpu_*.sh, quick_gpu_check.sh), which source it:
#     source "$(dirname "$0")/_gpu_env.sh"
# Run from the repo root with the wheels of the agent's dependencies in .whl/ (see
# docs/gpu-runbook.md): installs them into /tmp/site (pip's output discarded), puts the repo and
# /tmp/site on PYTHONPATH, and makes $OUT (default /tmp/gpu-out).
# Once per machine (a marker): scripts run side by side (gpu_lanes.sh) must not install at once.
if [ ! -e /tmp/site/.installed ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  touch /tmp/site/.installed
fi
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
