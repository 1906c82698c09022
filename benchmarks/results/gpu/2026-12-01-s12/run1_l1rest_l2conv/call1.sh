#!/usr/bin/env bash
# session 12, call 1 at HEAD: level 1's six (41, 82, 84, 85, 87, 99), then level 2's ten
# convolutions not re-measured in session 11 and four it did measure (6, 24, 48, 79: input copy)
O=$OUT
mkdir -p "$O/l1" "$O/l2"
OUT=$O/l1 LEVELS=level1 JOBS_PER_GPU=8 DEADLINE_S=${D1:-160} \
  BENCH_ARGS="--only=$(cat only1.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
OUT=$O/l2 LEVELS=level2 JOBS_PER_GPU=8 DEADLINE_S=${D2:-395} \
  BENCH_ARGS="--only=$(cat only2.txt)" bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
rm -f "$O"/l1/env.txt "$O"/l1/report_level1.md "$O"/l2/report_level2.md
tail -n 12 "$O/l1/log.txt"
tail -n 30 "$O/l2/log.txt"
