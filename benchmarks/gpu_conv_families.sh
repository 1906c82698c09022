#!/usr/bin/env bash
# Issue 37: the convolutions in kernel families (tools/kernels/conv_gemm.py, conv_split.py,
# conv_direct.py, conv_1x1.py, conv_common.py beside the launcher triton_conv.py), copied into
# candidates as one namespace by `triton_conv.candidate_source()`, run natively on the GPU:
# tests/test_triton_conv.py's cuda matrix (every family and knob: implicit GEMM tap loop, flat
# loop and phased, SPLIT_W, X_LAST, X_SPLIT bf16x3/ieee with PART_SUM, direct and DIRECT_2D,
# AS_GEMM; tf32x3 and the autotuner) from that copied source, against torch.convolution in fp64.
# The CPU (interpreter) matrix passed on the split; this is the same matrix compiled for sm_90.
#
#   run(command="bash benchmarks/gpu_conv_families.sh", carry=[".whl"], kind="nvidia-h200",
#       timeout_s=300)
#
# Expected: about 1-3 minutes (one subprocess compiles and autotunes every case). $OUT gets
# triton_conv_gpu.txt (pytest's summary and its exit status) and env.txt.
set -u
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
python -c "import torch, triton; print(torch.__version__, triton.__version__,
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')" >"$OUT/env.txt" 2>&1
git log --oneline -1 >>"$OUT/env.txt" 2>&1
timeout 240 python -m pytest -q -n 0 -p no:cacheprovider -rs tests/test_triton_conv.py >"$OUT/triton_conv_gpu.txt" 2>&1
echo "pytest exit $?" >>"$OUT/triton_conv_gpu.txt"
tail -5 "$OUT/triton_conv_gpu.txt"
