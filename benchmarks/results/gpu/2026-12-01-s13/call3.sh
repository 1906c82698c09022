#!/usr/bin/env bash
# session 13, call 3: sixteen level-2 convolutions below 0.97x whose verdicts are session 11's
# (before the sized path reached convolution drafts, static drafts without layout optimization,
# PART_SUM): the lowest sixteen by speedup over the better baseline, one bench over .kb/s13c.
O=$OUT
mkdir -p .kb/s13c
for n in 11 32 5 31 42 2 44 36 35 46 54 7 16 100 67 49; do cp .kb/level2/${n}_*.py .kb/s13c/; done
OUT=$O LEVELS=s13c JOBS_PER_GPU=8 DEADLINE_S=${D:-570} bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
echo "commit $(cat COMMIT 2>/dev/null)" >>"$O/log.txt"
tail -n 24 "$O/log.txt"
