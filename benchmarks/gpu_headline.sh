#!/usr/bin/env bash
# Issue 35's headline on one H200, on a recorded subset: 12 level-1 and 8 level-2 KernelBench
# problems (the quickest of session 13's merged table, convolutions among them, where
# cudnn.benchmark matters) through `agent bench --backend compiler --samples 1 --no-tune`, one
# level after the other on the one GPU, then `benchmarks/headline.py` over both: the geomean,
# median, trimmed and capped geomeans and the count at >= 1.0x, over the bar and over eager
# timed with torch.backends.cudnn.benchmark = True (the new baseline beside the bar), all
# problems and per level. What it shows: that eager with cudnn.benchmark is timed on the GPU
# (the headline's "eager with cudnn.benchmark" rows, the reports' "vs eager cudnn.benchmark"
# column), how far it moves the convolutions' speedups, and the headline of this subset.
#
#   run(command="bash benchmarks/gpu_headline.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=600)
#
# Expected: about 6-8 minutes (session 13 took 35-80 s of job time a problem with 8 jobs on the
# GPU; the subset's job time summed to ~1,100 s; x100 scale trials and the precision sample
# came since). It stops itself so that everything, packing included, is done DEADLINE_S after
# it started (level 1 gets 12/20 of the bench time, level 2 what is left); problems it did not
# reach are named in the reports, and the headline covers the ones it did.
#
# Environment (defaults in brackets): DEADLINE_S [540], KB_DIR [.kb/kb, else .kb] (the
# KernelBench levels: $KB_DIR/level1/*.py), JOBS_PER_GPU [6], STOP_GRACE_S [15],
# BENCH_DIR [headline_out], BENCH_ARGS [] (more `agent bench` flags).
# $OUT gets 7 files: headline.md and headline.json (benchmarks/headline.py over both levels),
# report_level1.md and report_level2.md, bench_headline.tgz (both bench dirs: candidates,
# verdicts, profiles, logs), log.txt (this script's log, the benches' tails), env.txt.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-540}
KB_DIR=${KB_DIR:-$([ -d .kb/kb/level1 ] && echo .kb/kb || echo .kb)}
JOBS_PER_GPU=${JOBS_PER_GPU:-6}
STOP_GRACE_S=${STOP_GRACE_S:-15}
BENCH_DIR=${BENCH_DIR:-headline_out}
KILL_AFTER_S=$((STOP_GRACE_S + 20))
PACK_S=40
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }

LEVEL1=12_Matmul_with_diagonal_matrices_,20_LeakyReLU,41_Max_Pooling_1D,93_masked_cumsum,\
85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel,\
55_conv_standard_2D__asymmetric_input__square_kernel,\
57_conv_transposed_2D__square_input__square_kernel,\
58_conv_transposed_3D__asymmetric_input__asymmetric_kernel,\
80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__,\
81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__,\
59_conv_standard_3D__asymmetric_input__square_kernel,\
79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__
LEVEL2=81_Gemm_Swish_Divide_Clamp_Tanh_Clamp,80_Gemm_Max_Subtract_GELU,\
48_Conv3d_Scaling_Tanh_Multiply_Sigmoid,67_Conv2d_GELU_GlobalAvgPool,32_Conv2d_Scaling_Min,\
25_Conv2d_Min_Tanh_Tanh,58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp,\
24_Conv3d_Min_Softmax

{
  date -u
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch",
torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' 2>&1
  echo "DEADLINE_S=$DEADLINE_S KB_DIR=$KB_DIR JOBS_PER_GPU=$JOBS_PER_GPU BENCH_ARGS=${BENCH_ARGS:-}"
  git rev-parse HEAD 2>/dev/null || cat COMMIT 2>/dev/null
} >"$OUT/env.txt" 2>&1

for level in level1 level2; do
  [ -d "$KB_DIR/$level" ] || { log "no $KB_DIR/$level (carry .kb)"; exit 2; }
done

kill_leftovers() { # the job processes a killed bench leaves (their cwd under its TMPDIR)
  local p
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$1"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
  done
}

run_level() { # run_level LEVEL ONLY SHARE(of 20): until its share of the time left, then SIGINT
  local level=$1 only=$2 share=$3 tmp=/tmp/hl-tmp/$1 rc
  local left=$((DEADLINE_S - (SECONDS - START) - PACK_S))
  local limit=$((left * share / 20 - KILL_AFTER_S))
  if [ "$limit" -lt 30 ]; then
    log "$level: no time left ($limit s)"
    return
  fi
  mkdir -p "$tmp" "$BENCH_DIR/$level"
  log "$level: up to $limit s"
  # shellcheck disable=SC2086 # BENCH_ARGS: several flags
  TMPDIR=$tmp timeout --foreground --signal=INT --kill-after="$KILL_AFTER_S" "$limit" \
    python3 -m agent bench "$KB_DIR/$level" --only "$only" --backend compiler --samples 1 \
    --k 1 --no-tune --jobs-per-gpu "$JOBS_PER_GPU" --stop-grace "$STOP_GRACE_S" \
    --out "$BENCH_DIR/$level" ${BENCH_ARGS:-} >"$BENCH_DIR/$level/bench.log" 2>&1
  rc=$?
  kill_leftovers "$tmp"
  log "$level: exit $rc, $(find "$BENCH_DIR/$level" -name sample.json | wc -l) candidates done"
  if [ ! -f "$BENCH_DIR/$level/report.json" ] || [ -n "$(find "$BENCH_DIR/$level" \
    -name sample.json -newer "$BENCH_DIR/$level/report.json" -print -quit)" ]; then
    timeout 60 python3 -m agent bench --rebuild "$BENCH_DIR/$level" >/dev/null 2>>"$LOG"
  fi
}

run_level level1 "$LEVEL1" 12
run_level level2 "$LEVEL2" 20 # (all that is left)

dirs=()
for level in level1 level2; do
  d=$BENCH_DIR/$level
  [ -f "$d/bench.json" ] || continue
  dirs+=("$d")
  cp "$d/report.md" "$OUT/report_$level.md" 2>/dev/null
  { echo "---- tail of $level's bench log"; tail -n 30 "$d/bench.log" | grep -v Warning; } >>"$LOG"
done
if [ ${#dirs[@]} -gt 0 ]; then
  timeout 60 python3 benchmarks/headline.py "${dirs[@]}" --json "$OUT/headline.json" \
    >"$OUT/headline.md" 2>>"$LOG"
  cat "$OUT/headline.md"
  tar czf "$OUT/bench_headline.tgz" -C "$BENCH_DIR" "${dirs[@]##*/}" 2>>"$LOG"
  log "bench_headline.tgz: $(($(stat -c %s "$OUT/bench_headline.tgz") / 1024)) KiB"
fi
log "finished (deadline $DEADLINE_S s)"
