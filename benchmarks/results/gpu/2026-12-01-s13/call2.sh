#!/usr/bin/env bash
# session 13, call 2: the verifier on CUDA after the fp64 rule's allowance over draws
# (benchmarks/gpu_verifier.sh: the adversarial corpus, Liger ops, honest launch paths), then
# level2/19, 21, 23, 60 (the sized path's 360 s start) and level1/57 (static draft without
# layout optimization) in one bench over .kb/s13b.
O=$OUT
mkdir -p "$O/v" .kb/s13b
OUT=$O/v bash benchmarks/gpu_verifier.sh >/dev/null 2>&1
for f in level2/19_ level2/21_ level2/23_ level2/60_ level1/57_; do cp .kb/${f}*.py .kb/s13b/; done
OUT=$O LEVELS=s13b JOBS_PER_GPU=8 DEADLINE_S=$((${D:-575} - SECONDS)) bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
echo "commit $(cat COMMIT 2>/dev/null)" >>"$O/log.txt"
tail -n 8 "$O/v/verifier.txt"
tail -n 16 "$O/log.txt"
