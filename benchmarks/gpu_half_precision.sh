#!/usr/bin/env bash
# Issue 36: the tensor-core GEMM and convolutions of bf16/fp16 drafts on one H200 (about 5
# minutes: DEADLINE_S 290 s, the setup included). `agent bench --backend compiler --no-tune
# --precision bf16`, then `--precision fp16`, on KernelBench level-1 GEMMs and convolutions at
# their published sizes, printing each sample's verdict (status, precision, tolerance,
# arithmetic) and its speedups over eager and torch.compile, both timed at that dtype, and the
# draft's GEMM tiles and convolution picks (the drafter's notes):
#   1_Square_matrix_multiplication_ (4096^3: session 17's 0.06x eager at fp16),
#   6_Matmul_with_large_K_dimension_ (256x524288x256: split K),
#   8_Matmul_with_irregular_shapes_ (8205x2949x5921: K and rows padded to 16 elements),
#   50_conv_standard_2D__square_input__square_kernel (the 3-channel 11x11 stride-4 stem),
#   55_conv_standard_2D__asymmetric_input__square_kernel (64 -> 128 channels 3x3, NCHW:
#     the input copied channels-last at half precision).
# Session 17's bf16 bench took 111 s for three problems with four other lanes on the GPU: five
# may not all finish in a precision's share (PROBLEMS=1,50 for fewer; 67_conv_standard_1D
# for one more convolution).
# Outputs in $OUT: half.txt (the log, the summaries, the draft notes), bf16.json and fp16.json
# (one row per sample), bench_{bf16,fp16}_stderr.txt, report_{bf16,fp16}.md,
# kernels_{bf16,fp16}.tgz (each sample's kernel.py, response.txt and verdict.json). A bench cut
# at its limit (rc 124) still lists the samples that finished.
#
#   run(command="bash benchmarks/gpu_half_precision.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=330)
#
# Environment (defaults in brackets): PROBLEMS [1,6,8,50,55], PRECISIONS [bf16 fp16],
# DEADLINE_S [290] (seconds after the start by which both benches have ended), JOBS_PER_GPU [4],
# KB_DIR [.kb/kb]. DRY_RUN=1: print the commands and check the problems exist; run nothing.
set -u
START=$SECONDS
PROBLEMS=${PROBLEMS:-1,6,8,50,55}
PRECISIONS=${PRECISIONS:-bf16 fp16}
DEADLINE_S=${DEADLINE_S:-290}
JOBS_PER_GPU=${JOBS_PER_GPU:-4}
KB_DIR=${KB_DIR:-.kb/kb}
if [ "${DRY_RUN:-0}" = 1 ]; then
  OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
else
  source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
fi
LOG=$OUT/half.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }

missing=0
for id in ${PROBLEMS//,/ }; do
  found=$(ls "$KB_DIR/level1/${id}_"*.py 2>/dev/null | head -1)
  if [ -z "$found" ]; then log "level1/$id: no problem file under $KB_DIR/level1"; missing=1; fi
done
[ "$missing" = 1 ] && log "some problems are missing (copy ../shared/kernelbench to $KB_DIR)"

bench() { # bench PRECISION SECONDS
  local p=$1 limit=$2
  local cmd=(python3 -m agent bench --kernelbench "$KB_DIR" --level 1 --problems "$PROBLEMS"
    --backend compiler --no-tune --precision "$p" --jobs-per-gpu "$JOBS_PER_GPU"
    --out "/tmp/half-$p" --json)
  log "agent bench --precision $p, level 1 problems $PROBLEMS (at most $limit s)"
  if [ "${DRY_RUN:-0}" = 1 ]; then
    log "dry run: timeout $limit ${cmd[*]}"
    return
  fi
  timeout -s INT -k 20 "$limit" "${cmd[@]}" >"/tmp/half-$p.json" 2>"$OUT/bench_${p}_stderr.txt"
  log "bench $p: rc=$? (124: cut at its limit; the finished samples follow)"
  python3 benchmarks/precision_summary.py "/tmp/half-$p" --json "$OUT/$p.json" | tee -a "$LOG"
  # the draft's choices: the tile each GEMM call got, each convolution's picks
  for r in /tmp/half-"$p"/*/*/response.txt; do
    [ -e "$r" ] || continue
    echo "-- $(basename "$(dirname "$(dirname "$r")")") ($p), draft notes:" >>"$LOG"
    grep -E "gemm#|conv#|GEMM tiles|convolution variants|draft took" "$r" | cut -c1-300 >>"$LOG"
  done
  for k in /tmp/half-"$p"/*/*/kernel.py; do
    [ -e "$k" ] || continue
    echo "-- $k: $(grep -cE '_gemm_tc_kernel\[|_conv_gemm_kernel_tuned_half' "$k") half-precision launch sites" >>"$LOG"
    grep -E '^\s+(gemm|triton_convolution)\(' "$k" | cut -c1-300 >>"$LOG"
  done
  cp "/tmp/half-$p/report.md" "$OUT/report_$p.md" 2>/dev/null
  (cd /tmp && tar czf "$OUT/kernels_$p.tgz" --ignore-failed-read \
    $(cd /tmp && ls -d half-"$p"/*/*/kernel.py half-"$p"/*/*/response.txt half-"$p"/*/*/verdict.json 2>/dev/null)) 2>/dev/null
}

set -- $PRECISIONS
n=$#
for p in "$@"; do
  left=$((DEADLINE_S - (SECONDS - START) - 25)) # 25 s: summaries and packing after the bench
  share=$((left / n))
  [ "$share" -lt 40 ] && share=40
  bench "$p" "$share"
  n=$((n - 1))
done
log "done"
