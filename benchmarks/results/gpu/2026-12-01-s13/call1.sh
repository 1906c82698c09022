#!/usr/bin/env bash
# session 13, call 1: level2/14 under the fp64 rule's allowance over draws; level2/66 (dropout in
# training mode, verified statistically: its first GPU run); level2/92 (the draft's phase
# times); level2/17, 52 and level1/55 (static drafts without layout optimization); level2/77, 78
# (PART_SUM only after a refusal). One bench over a folder holding those eight problems
# (.kb/s13a): eight jobs, all at once.
O=$OUT
echo "commit $(cat COMMIT 2>/dev/null)" >"$O/commit.txt"
mkdir -p .kb/s13a
for f in level2/14_ level2/66_ level2/92_ level2/17_ level2/52_ level2/77_ level2/78_ level1/55_; do
  cp .kb/${f}*.py .kb/s13a/
done
OUT=$O LEVELS=s13a JOBS_PER_GPU=8 DEADLINE_S=${D:-560} bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
cat "$O/commit.txt" >>"$O/log.txt"; rm -f "$O/commit.txt"
tail -n 30 "$O/log.txt"
