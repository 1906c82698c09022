#!/usr/bin/env bash
# session 12, call 3 at 0e62a6e (X_SPLIT PART_SUM): level1/87 resumed, 55 and 57; level2/77
# and 78 again (removed from call 2's tarball)
O=$OUT
mkdir -p "$O/l1" "$O/l2"
OUT=$O/l1 LEVELS=level1 JOBS_PER_GPU=8 DEADLINE_S=${D1:-240} RESUME_TGZ=.kb/resume/s12c1_level1.tgz \
  BENCH_ARGS="--only=$(cat only1.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
OUT=$O/l2 LEVELS=level2 JOBS_PER_GPU=8 DEADLINE_S=${D2:-290} RESUME_TGZ=.kb/resume/s12c2_level2.tgz \
  BENCH_ARGS="--only=$(cat only2.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
rm -f "$O"/l1/env.txt "$O"/l1/report_level1.md "$O"/l2/report_level2.md
tail -n 12 "$O/l1/log.txt"
tail -n 14 "$O/l2/log.txt"
