#!/usr/bin/env bash
# session 13, call 4: the other level-2 convolutions below 0.97x whose verdicts are session 11's
# (before the sized path reached convolution drafts, static drafts without layout optimization,
# PART_SUM): the eleven call 3 left, one bench over .kb/s13d, under the budget left (430 s).
O=$OUT
mkdir -p .kb/s13d
for n in 15 20 25 26 34 38 3 47 57 69 71; do cp .kb/level2/${n}_*.py .kb/s13d/; done
OUT=$O LEVELS=s13d JOBS_PER_GPU=8 DEADLINE_S=${D:-430} bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
echo "commit $(cat COMMIT 2>/dev/null)" >>"$O/log.txt"
tail -n 24 "$O/log.txt"
