#!/usr/bin/env bash
# session 12, call 2 at 85ce403 (convolution drafts get the sized path): level1/87 resumed;
# level 2: call 1's three unfinished, then 60, 90, 91 again and nine convolutions whose
# Inductor kernels took 30-60% of their time in session 11
O=$OUT
mkdir -p "$O/l1" "$O/l2"
OUT=$O/l1 LEVELS=level1 JOBS_PER_GPU=8 DEADLINE_S=${D1:-100} RESUME_TGZ=.kb/resume/s12c1_level1.tgz \
  BENCH_ARGS="--only=$(cat only1.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
OUT=$O/l2 LEVELS=level2 JOBS_PER_GPU=8 DEADLINE_S=${D2:-470} RESUME_TGZ=.kb/resume/s12c1_level2.tgz \
  BENCH_ARGS="--only=$(cat only2.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
rm -f "$O"/l1/env.txt "$O"/l1/report_level1.md "$O"/l2/report_level2.md
tail -n 8 "$O/l1/log.txt"
tail -n 34 "$O/l2/log.txt"
