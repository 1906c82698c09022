#!/usr/bin/env bash
# Issue 34 on a GPU (nvidia-h200, about 5 minutes, no wheels needed):
#     bash benchmarks/gpu_isolation.sh
# What a candidate's job can reach on this machine (tools.sandboxing.isolation), the isolation and timing
# tests (tests/test_isolation.py, tests/test_timing_memo.py, their GPU ones included) and the
# profile tests that time kernels on the GPU. Output: $OUT/isolation.txt.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_AGENT_CACHE=/tmp/ta-cache
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
{
id; uname -r; python3 -c "import sys, torch, triton; print(sys.executable, torch.__version__, triton.__version__)"
ls -ld / "$PWD" "$(dirname "$(python3 -c 'import torch; print(torch.__file__)')")"; ls -l /dev/nvidia*
python3 - <<'PY'
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import Sandbox
for device in ("cpu", "cuda"):
    sb = Sandbox(device=device, max_workers=1, limits=Limits(timeout_s=120))
    out = sb.run("tests.test_isolation:intruder", 1, 0, 4, True, limits=Limits(timeout_s=120, guard=False))
    print(device, out.kind, out.error[-800:], out.value)
PY
timeout 420 python3 -m pytest -q -p no:cacheprovider -n 0 -rs tests/test_isolation.py tests/test_timing_memo.py
echo "isolation+memo tests rc=$?"
timeout 300 python3 -m pytest -q -p no:cacheprovider -n 0 tests/test_profile.py -k gpu
echo "profile gpu tests rc=$?"
} 2>&1 | tee "$OUT/isolation.txt"
