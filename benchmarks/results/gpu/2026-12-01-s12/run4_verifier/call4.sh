#!/usr/bin/env bash
# session 12, call 4: the verifier on CUDA (benchmarks/gpu_verifier.sh: the adversarial corpus
# with session 11's new kind, Liger ops, honest launch paths, sanitizer), then level2/92 alone
# (no verdict in two calls this session: does its draft finish with the GPU to itself?)
O=$OUT
mkdir -p "$O/v" "$O/l2"
OUT=$O/v bash benchmarks/gpu_verifier.sh >/dev/null 2>&1
rm -f "$O"/v/liger.json "$O"/v/sanitize_ok.json "$O"/v/sanitize_oob.json
OUT=$O/l2 LEVELS=level2 JOBS_PER_GPU=8 DEADLINE_S=${D2:-210} \
  BENCH_ARGS="--only=92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp" \
  bash benchmarks/gpu_kernelbench.sh >/dev/null 2>&1
rm -f "$O"/l2/env.txt "$O"/l2/summary.md "$O"/l2/report_level2.md
grep -v "^    job" "$O/v/verifier.txt" | tail -n 40
tail -n 12 "$O/l2/log.txt"
for f in "$O"/l2/bench_level2.tgz; do tar xzf "$f" -O --wildcards '*/92_*/00/response.txt' 2>/dev/null | head -c 1500; done
