#!/usr/bin/env bash
# Issue 36, part A on one H200 (about 3.5 minutes at most: 120 s, the rest of 200 s, the
# setup): `agent bench --precision bf16` with the compiler drafter (--no-tune) on three
# KernelBench level-1 problems, and `--precision fp16` on two, printing each sample's verdict (status, the precision it names, its tolerance and
# arithmetic) and its speedups over eager and torch.compile, both timed at that dtype:
#   1_Square_matrix_multiplication_ (4096^3: the GEMM template at bf16 on tensor cores),
#   50_conv_standard_2D__square_input__square_kernel (the convolution kernels at bf16),
#   95_CrossEntropyLoss (integer targets, which stay int64: KernelBench would cast them).
# Outputs in $OUT: precision.txt (the log and the summaries), bf16.json and fp16.json (one row
# per sample), bench_{bf16,fp16}_stderr.txt, report_{bf16,fp16}.md. A bench cut at its limit
# (rc 124) still lists the samples that finished.
#
#   run(command="bash benchmarks/gpu_precision_check.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=300)
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/precision.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }

bench() {  # bench PRECISION PROBLEMS SECONDS
  local p=$1 ids=$2 limit=$3
  log "agent bench --precision $p, level 1 problems $ids (at most $limit s)"
  timeout "$limit" python3 -m agent bench --kernelbench .kb/kb --level 1 --problems "$ids" \
    --backend compiler --no-tune --precision "$p" --jobs-per-gpu 4 \
    --out "/tmp/precision-$p" --json >"/tmp/precision-$p.json" 2>"$OUT/bench_${p}_stderr.txt"
  log "bench $p: rc=$? (124: cut at its limit; the finished samples follow)"
  python3 benchmarks/precision_summary.py "/tmp/precision-$p" --json "$OUT/$p.json" | tee -a "$LOG"
  cp "/tmp/precision-$p/report.md" "$OUT/report_$p.md" 2>/dev/null
}

bench bf16 1,50,95 120
LEFT=$((200 - (SECONDS - START))); [ "$LEFT" -lt 40 ] && LEFT=40
bench fp16 1,50 "$LEFT"
log "done"
