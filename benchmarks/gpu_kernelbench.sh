#!/usr/bin/env bash
# KernelBench level1 + level2 (156 problems at their published sizes) through `agent bench
# --backend compiler` on a two-GPU machine (nvidia-h200-x2): one level per GPU, both at once,
# JOBS_PER_GPU verification jobs at a time on each GPU (timing still has its GPU alone). Two
# independent benches rather than one over both GPUs: in one bench a timing or drafting job
# waiting for a GPU holds back every shared job, on both GPUs (tools.sandboxing.sandbox.SlotPool); the
# levels are about the same size (76 and 80 problems). Reasoned, not measured.
#
# The problems travel in .kb/ (git-ignored: `cp -r ../shared/kernelbench .kb`), the wheels in
# .whl/ (docs/gpu-runbook.md). It stops itself (SIGINT, then KILL) so that everything, packing
# included, is done DEADLINE_S seconds after it started; a later call resumes from the tarballs
# of the last one, skipping finished problems:
#
#   run(command="bash benchmarks/gpu_kernelbench.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200-x2", timeout_s=600)
#   mkdir -p .kb/resume && cp <files_at>/bench_level*.tgz .kb/resume/      (here, between calls)
#   run(command="RESUME_TGZ='.kb/resume/bench_level1.tgz .kb/resume/bench_level2.tgz' bash
#       benchmarks/gpu_kernelbench.sh", carry=[".whl", ".kb"], kind="nvidia-h200-x2", timeout_s=600)
#
# Environment (defaults in brackets):
#   DEADLINE_S [540]   seconds after the start by which the script has finished
#   BENCH_DIR [bench_out]  where the bench output dirs live: $BENCH_DIR/level1, $BENCH_DIR/level2
#   RESUME_TGZ []      tarballs of an earlier call (paths in the repo, space-separated),
#                      unpacked into $BENCH_DIR before the run
#   JOBS_PER_GPU [4]   verification jobs at once per GPU (session 3's measured setting)
#   STOP_GRACE_S [15]  after SIGINT, seconds the running candidates may take to finish
#   KB_DIR [.kb], LEVELS [level1 level2], BENCH_ARGS [] (more `agent bench` flags, e.g.
#                      "--timeout 120"; a resumed run must keep the same verification settings)
# $OUT gets 7 files, no folders (the device tool returns at most 8, 16 MiB each):
#   bench_<level>.tgz  the whole output dir (candidates, verdicts, profiles, the bench's log);
#   report_<level>.md  its report; summary.md  benchmarks/kernelbench_summary.py over both;
#   log.txt  this script's log and the tail of each bench's log; env.txt  nvidia-smi, versions.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-540}
BENCH_DIR=${BENCH_DIR:-bench_out}
KB_DIR=${KB_DIR:-.kb}
LEVELS=${LEVELS:-level1 level2}
JOBS_PER_GPU=${JOBS_PER_GPU:-4}
STOP_GRACE_S=${STOP_GRACE_S:-15}
KILL_AFTER_S=$((STOP_GRACE_S + 20)) # SIGINT -> running candidates finish -> report -> exit
PACK_S=40                           # reports rebuilt, summary, tarballs
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }

{ # versions and GPUs, beside the run
  date -u
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch",
torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
"gpus", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])' 2>&1
  python3 -c 'import langgraph, pydantic; print("wheels: langgraph and pydantic import")' 2>&1 |
    tail -1
  echo "DEADLINE_S=$DEADLINE_S BENCH_DIR=$BENCH_DIR JOBS_PER_GPU=$JOBS_PER_GPU" \
    "STOP_GRACE_S=$STOP_GRACE_S RESUME_TGZ=${RESUME_TGZ:-} BENCH_ARGS=${BENCH_ARGS:-}"
} >"$OUT/env.txt" 2>&1 &

mkdir -p "$BENCH_DIR"
for t in ${RESUME_TGZ:-}; do
  tar xzf "$t" -C "$BENCH_DIR" || { log "cannot unpack $t"; exit 2; }
  log "resumed from $t"
done

# A bench killed after its grace leaves its jobs' processes behind (each leads its own
# session); they are the processes whose working directory is under that bench's TMPDIR.
kill_leftovers() {
  local p
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/cwd" 2>/dev/null)" in "$1"/*) kill -KILL "${p#/proc/}" 2>/dev/null ;; esac
  done
}

run_level() { # run_level LEVEL GPU: until the deadline (SIGINT), KILL_AFTER_S later KILL
  local level=$1 gpu=$2 tmp=/tmp/kb-tmp/$1 rc
  local limit=$((DEADLINE_S - (SECONDS - START) - KILL_AFTER_S - PACK_S))
  if [ "$limit" -lt 30 ]; then
    log "$level: no time left ($limit s)"
    return
  fi
  mkdir -p "$tmp" "$BENCH_DIR/$level"
  local blog=$BENCH_DIR/$level/bench-$(date -u +%Y%m%dT%H%M%S).log
  log "$level on GPU ${gpu:-none}: up to $limit s, log $blog"
  # --foreground: the signals go to the bench alone, not to its process group, where a job
  # process that has not yet left it (setsid) would die of the SIGINT and read as a crash.
  # shellcheck disable=SC2086 # BENCH_ARGS: several flags
  # The per-machine cache (drafts, baselines, problem checks: tools/core/cache.py) beside the
  # level, packed with it: a resumed call reuses the drafts and baselines an interrupted one
  # made (a draft is keyed by the drafter's code, so a changed drafter drafts again).
  CUDA_VISIBLE_DEVICES=$gpu TMPDIR=$tmp TRITON_AGENT_CACHE=$BENCH_DIR/cache-$level \
    timeout --foreground --signal=INT --kill-after="$KILL_AFTER_S" "$limit" \
    python3 -m agent bench "$KB_DIR/$level" --backend compiler --samples 1 --k 1 \
    --jobs-per-gpu "$JOBS_PER_GPU" --stop-grace "$STOP_GRACE_S" --out "$BENCH_DIR/$level" \
    ${BENCH_ARGS:-} >"$blog" 2>&1
  rc=$?
  kill_leftovers "$tmp"
  # 0: every problem has a verdict; 1: some have none or could not run; 124: stopped at the
  # deadline (report written); 137: killed after the grace (report rebuilt below)
  log "$level: exit $rc, $(find "$BENCH_DIR/$level" -name sample.json | wc -l) candidates done"
}

progress() {
  local level line=""
  for level in $LEVELS; do
    line+="$level $(find "$BENCH_DIR/$level" -name sample.json 2>/dev/null | wc -l)/$(
      find "$KB_DIR/$level" -maxdepth 1 -name '*.py' | wc -l) "
  done
  log "done: $line"
  jobs_now
}

jobs_now() { # the job processes alive (age, job dir, function): what a stalled bench waits on
  local p cwd
  for p in /proc/[0-9]*; do
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    case "$cwd" in /tmp/kb-tmp/*)
      echo "    job ${p#/proc/} $(ps -o etimes= -p "${p#/proc/}" 2>/dev/null | tr -d ' ')s ${cwd#/tmp/kb-tmp/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null | cut -c1-80)" ;;
    esac
  done | head -20 | tee -a "$LOG"
}

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
# The GPUs to use: those CUDA_VISIBLE_DEVICES names (a caller giving this bench one GPU of two,
# benchmarks/gpu_finish.sh), else all.
if [ "$NGPU" -gt 0 ] && [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  read -r -a gpu_ids <<<"${CUDA_VISIBLE_DEVICES//,/ }"
  NGPU=${#gpu_ids[@]}
else
  gpu_ids=()
  for ((g = 0; g < NGPU; g++)); do gpu_ids+=("$g"); done
fi
read -r -a levels <<<"$LEVELS"
progress
pids=()
# Level i on the (i mod NGPU)th GPU; levels that share a GPU run one after the other (their
# timings must not overlap). No GPU: one after the other on the CPU (a dry run of this script).
for ((g = 0; g < (NGPU > 0 ? NGPU : 1); g++)); do
  mine=()
  for ((i = g; i < ${#levels[@]}; i += (NGPU > 0 ? NGPU : 1))); do mine+=("${levels[i]}"); done
  [ ${#mine[@]} -eq 0 ] && continue
  gpu=$([ "$NGPU" -gt 0 ] && echo "${gpu_ids[g]}" || echo "")
  (for level in "${mine[@]}"; do run_level "$level" "$gpu"; done) &
  pids+=($!)
done
running() {
  local p
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}
while running; do # progress every minute
  for ((t = 0; t < 30; t++)); do running && sleep 2; done
  progress
done
wait

for level in $LEVELS; do # a killed bench wrote no report of its last candidates: rebuild it
  d=$BENCH_DIR/$level
  [ -f "$d/bench.json" ] || continue
  if [ ! -f "$d/report.json" ] || [ -n "$(find "$d" -name sample.json -newer "$d/report.json" \
    -print -quit)" ]; then
    python3 -m agent bench --rebuild "$d" >/dev/null 2>>"$LOG" &
  fi
done
wait
dirs=()
for level in $LEVELS; do
  d=$BENCH_DIR/$level
  [ -d "$d" ] || continue
  {
    echo "---- tail of $level's bench logs"
    tail -n 40 "$d"/bench-*.log | grep -v Warning
  } >>"$LOG" 2>&1
  [ -f "$d/bench.json" ] || continue
  dirs+=("$d")
  cp "$d/report.md" "$OUT/report_$level.md" 2>/dev/null
  cached=()
  [ -d "$BENCH_DIR/cache-$level" ] && cached=("cache-$level")
  tar czf "$OUT/bench_$level.tgz" -C "$BENCH_DIR" "$level" "${cached[@]}"
  size=$(stat -c %s "$OUT/bench_$level.tgz")
  log "bench_$level.tgz: $((size / 1024)) KiB"
  [ "$size" -gt $((15 << 20)) ] && log "WARNING: bench_$level.tgz is near the 16 MiB limit"
done
if [ ${#dirs[@]} -gt 0 ]; then
  python3 benchmarks/kernelbench_summary.py "${dirs[@]}" >"$OUT/summary.md" 2>>"$LOG"
  cat "$OUT/summary.md"
fi
{ nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv; } >>"$OUT/env.txt" 2>&1
log "finished (deadline $DEADLINE_S s)"
