#!/usr/bin/env bash
# The low-mantissa-bit check (issue 35, tools/checks/output_bits.py) on one H200 (about 2-3 minutes,
# at most 4): benchmarks/output_bits_corpus.py on CUDA, 4 jobs: every corpus kind expected `ok`
# (the honest Triton kernels' outputs on the GPU, ex2.approx and tl.dot included: none may become
# `mismatch` by its low bits), the cancelling sums (cancel_sum__outputs_rounded_15_bits must be
# `mismatch` with "significant mantissa bits" in its message, its honest twin `ok`) and the
# bf16/fp16/15-bit kinds. The CPU run: benchmarks/results/output_bits_corpus_cpu.md.
# Run from the repo root with the wheels in .whl/ (docs/gpu-runbook.md):
#
#   run(command="bash benchmarks/gpu_output_bits.sh", carry=[".whl"], kind="nvidia-h200",
#       timeout_s=300)
#
# $OUT gets 2 files: output_bits_corpus_cuda.md (a row per kind and the summary line) and
# output_bits_stderr.txt.
set -u
source "$(dirname "$0")/_gpu_env.sh"
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } \
  >"$OUT/output_bits_corpus_cuda.md" 2>/dev/null
timeout 230 python3 benchmarks/output_bits_corpus.py --device cuda --workers 4 \
  >>"$OUT/output_bits_corpus_cuda.md" 2>"$OUT/output_bits_stderr.txt"
echo "rc=$?" >>"$OUT/output_bits_corpus_cuda.md"
tail -3 "$OUT/output_bits_corpus_cuda.md"
