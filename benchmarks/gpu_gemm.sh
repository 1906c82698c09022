#!/usr/bin/env bash
# fp32 GEMM problems of KernelBench through the compiler drafter + the tuner's GEMM search
# (tools/kernels/gemm_template.py, tools.compile.tune.gemm_variants), timed against eager (cuBLAS SGEMM, TF32
# off) and torch.compile on one GPU (issue 15 item 2). Runs in <= 150 s:
#
#   run(command="bash benchmarks/gpu_gemm.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=200)
#
# Problems (KB_DIR [.kb], a copy of ../shared/kernelbench): level1 1_Square_matrix_multiplication_,
# 6_Matmul_with_large_K_dimension_, 7_Matmul_with_small_K_dimension_, 17_Matmul_with_transposed_B,
# level2 76_Gemm_Add_ReLU (12_Gemm_Multiply_LeakyReLU when present). PROBLEMS overrides the list.
# $OUT gets gemm.md (the table), gemm.json (every variant tried: time, precision, errors),
# log.txt and env.txt. DEADLINE_S [135]: the search stops so that everything ends in time.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-135}
KB_DIR=${KB_DIR:-.kb}
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
{
  date -u
  nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv 2>&1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} >"$OUT/env.txt" 2>&1

if [ -z "${PROBLEMS:-}" ]; then
  PROBLEMS=""
  for p in level1/1_Square_matrix_multiplication_ level1/6_Matmul_with_large_K_dimension_ \
    level1/7_Matmul_with_small_K_dimension_ level1/17_Matmul_with_transposed_B \
    level2/12_Gemm_Multiply_LeakyReLU level2/76_Gemm_Add_ReLU; do
    [ -f "$KB_DIR/$p.py" ] && PROBLEMS+="$KB_DIR/$p.py "
  done
fi
echo "problems: $PROBLEMS" | tee -a "$LOG"
LEFT=$((DEADLINE_S - (SECONDS - START) - 5))
# shellcheck disable=SC2086 # PROBLEMS: several paths
timeout --kill-after=5 "$((LEFT + 10))" \
  python3 benchmarks/gemm_bench.py --out "$OUT" --deadline-s "$LEFT" $PROBLEMS 2>&1 |
  tail -n 200 >>"$LOG"
echo "exit ${PIPESTATUS[0]} after $((SECONDS - START)) s" | tee -a "$LOG"
cat "$OUT/gemm.md" 2>/dev/null || echo "no table (see log.txt)"
