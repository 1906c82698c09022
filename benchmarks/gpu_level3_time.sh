#!/usr/bin/env bash
# Issue 33 (whole networks: time), one H200, about 9.5 minutes: a fixed list of KernelBench
# level-3 networks through `agent bench --backend compiler`, 8 jobs on the GPU as in session
# 15's measurement (4 of 36 networks reached a verdict in 560 s; the drafts took 108-238 s,
# two drafts each with Inductor, convolution picks and launch-config timing). Prints, per
# network: its verdict, its total time (draft + verify + time) and its phases, from each
# record's `phases` (the draft job's phase notes: draft.dynamic.*, draft.sized.*, and
# draft.final.launch configs, the launch configs now timed once a draft job).
#
#   run(command="bash benchmarks/gpu_level3_time.sh", carry=[".whl", ".kb"],
#       kind="nvidia-h200", timeout_s=600)
#   (resume, between calls: mkdir -p .kb/resume && cp <files_at>/bench_level3.tgz .kb/resume/
#    then RESUME_TGZ=.kb/resume/bench_level3.tgz bash benchmarks/gpu_level3_time.sh)
#
# Sample mode, one candidate a network, `--timeout 300` a candidate job (session 15's), and
# `--no-tune`: the bench's sample mode does not run the tuner anyway (report: "not tuned (the
# loop mode tunes)"); the flag says so. What it shows: how many of NETS reach a verdict, the
# median time per network (issue 33 asks for at most 120 s inside a bench of 8 jobs), and
# where each network's time went.
#
# Environment: KB3 [.kb/kb/level3, else .kb/level3] the level-3 problems (../shared/kernelbench
# carried as .kb/kb); NETS [below]; DEADLINE_S [510: the bench and its packing end by then,
# the table a few seconds later]; RESUME_TGZ []; JOBS_PER_GPU [8].
# $OUT (6 files): level3_time.md (the table), bench_level3.tgz, report_level3.md, summary.md,
# log.txt, env.txt (benchmarks/gpu_kernelbench.sh's).
set -u
START=$SECONDS
if [ -z "${KB3:-}" ]; then
  if [ -d .kb/kb/level3 ]; then KB3=.kb/kb/level3; else KB3=.kb/level3; fi
fi
NETS=${NETS:-"12_VGG19 10_ResNet101 15_DenseNet121 20_MobileNetV2 22_EfficientNetB0
7_GoogleNetInceptionV1 13_DenseNet121TransitionLayer 14_DenseNet121DenseBlock
17_SqueezeNetFireModule 21_EfficientNetMBConv 18_SqueezeNet 5_AlexNet 25_ShuffleNetUnit
27_RegNet 6_GoogleNetInceptionModule 3_DeepNarrowMLP"}
export OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
WORK=/tmp/level3_time
rm -rf "$WORK/kb" && mkdir -p "$WORK/kb/level3"
missing=""
for net in $NETS; do
  cp "$KB3/$net.py" "$WORK/kb/level3/" 2>/dev/null || missing+=" $net"
done
[ -n "$missing" ] && echo "not found in $KB3:$missing" >&2
[ -z "$(ls "$WORK/kb/level3")" ] && { echo "no network found in $KB3" >&2; exit 2; }

KB_DIR=$WORK/kb LEVELS=level3 JOBS_PER_GPU=${JOBS_PER_GPU:-8} DEADLINE_S=${DEADLINE_S:-510} \
  BENCH_DIR=$WORK/bench BENCH_ARGS="--timeout 300 --no-tune" \
  bash "$(dirname "$0")/gpu_kernelbench.sh"
echo "bench: exit $? after $((SECONDS - START)) s" >&2

python3 - "$WORK/bench/level3" "$WORK/kb/level3" >"$OUT/level3_time.md" <<'EOF'
import json, statistics, sys
from pathlib import Path

bench, problems = Path(sys.argv[1]), Path(sys.argv[2])
names = sorted(p.stem for p in problems.glob("*.py"))
rows, times = [], []
for name in names:
    found = sorted((bench / name).glob("*/sample.json")) if bench.is_dir() else []
    if not found:
        rows.append(f"| {name} | no verdict | - | - | - |")
        times.append(float("inf"))
        continue
    r = json.loads(found[0].read_text())
    total = r.get("wall_s") or r.get("duration_s") or 0.0
    times.append(float(total))
    ph = r.get("phases") or {}
    top = ", ".join(f"{k} {v:.0f}" for k, v in ph.items() if k.count(".") <= 2 and k != "draft")
    rows.append(
        f"| {name} | {r.get('status')} | {total:.0f} | {ph.get('draft', 0):.0f} | {top} |"
    )
done = [t for t in times if t != float("inf")]
print(f"# Level 3, {len(names)} networks: {len(done)} with a verdict\n")
print("Median time per network (no verdict counts as longer than any): "
      f"{statistics.median(times):.0f} s" if done else "no network reached a verdict")
print("\n| network | verdict | total s | draft s | phases (s) |\n|---|---|---|---|---|")
print("\n".join(rows))
print("\nEach record's full `phases`:\n")
for name in names:
    for f in sorted((bench / name).glob("*/sample.json")) if bench.is_dir() else []:
        r = json.loads(f.read_text())
        print(f"- {name}: " + json.dumps(r.get("phases") or {}))
EOF
cat "$OUT/level3_time.md"
echo "finished after $((SECONDS - START)) s" >&2
