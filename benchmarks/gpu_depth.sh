#!/usr/bin/env bash
# Issue 33 on one H200 (at most 8 minutes): where a deep CNN's time goes.
#
#   run(command="bash benchmarks/gpu_depth.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=600)
#
# 1. benchmarks/depth_scaling.py at real sizes on the GPU (batch 8, 64 channels, 56x56 images:
#    a ResNet stage): N = 8, 64, 32 conv-bn-relu blocks (plain), drafted on the GPU (Inductor,
#    convolution picks, launch configs, the sized path) and verified (2 trials), every job
#    profiled (cProfile, TRITON_AGENT_JOB_PROFILE). Beside the bench, to the same deadline.
# 2. `agent bench --backend compiler` over deep level-3 CNNs (12_VGG19, 10_ResNet101,
#    20_MobileNetV2, 15_DenseNet121, from .kb/level3: `cp -r ../shared/kernelbench .kb`), 8 jobs
#    on the GPU as in the issue's measurement, every job profiled; the records' `phases` (draft
#    phases from its notes, verification, the candidate job's stages, the timing job's) tabled.
#    Stops at the deadline (SIGINT: the bench writes what it has).
#
# $OUT (7 files): probe_rows.jsonl, probe_summary.md (the probe: phases per N and their
# exponents), probe_profiles.jsonl (each probe job's profile, summarised), bench_phases.md (per
# network: seconds per phase), bench_profiles.jsonl (each bench job's profile, summarised),
# bench_depth.tgz (the bench dir, no profiles), log.txt.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-470}
KB_DIR=${KB_DIR:-.kb}
NETS=${NETS:-12_VGG19 10_ResNet101 20_MobileNetV2 15_DenseNet121}
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
torch.cuda.get_device_name())' >>"$LOG" 2>&1

# The probe and the bench run side by side (each has about 7 minutes; run one after the other
# neither would finish): the bench's own timing jobs still have the GPU alone among the bench's
# jobs, but the probe's kernels may overlap them (speedups in this run are not figures; phase
# seconds are what it is for).
WORK=/tmp/depth_probe
rm -rf "$WORK" && mkdir -p "$WORK/out"
BENCH=/tmp/depth_bench
rm -rf "$BENCH" && mkdir -p "$BENCH/problems" "$BENCH/profiles" "$BENCH/out" /tmp/kb-tmp/depth
for net in $NETS; do cp "$KB_DIR/level3/$net.py" "$BENCH/problems/" || log "missing $net"; done
LIMIT=$((DEADLINE_S - (SECONDS - START) - 60))

# 1. the probe: N = 8, then 64, then 32 (the deepest before the limit cuts it)
log "probe: N = 8 64 32 at batch 8, 64 channels, 56x56, up to $LIMIT s"
timeout --signal=INT --kill-after=20 "$LIMIT" python3 benchmarks/depth_scaling.py \
  --device cuda --depths 8 64 32 --variants plain --batch 8 --channels 64 --size 56 \
  --trials 2 --timeout 300 --out "$WORK/out" --keep "$WORK/keep" >"$WORK/probe.log" 2>&1 &
PROBE=$!

# 2. the bench over deep level-3 networks, 8 jobs on the GPU (the issue's measurement)
log "bench: $NETS, 8 jobs on the GPU, up to $LIMIT s"
TRITON_AGENT_JOB_PROFILE=$BENCH/profiles TMPDIR=/tmp/kb-tmp/depth \
  timeout --foreground --signal=INT --kill-after=30 "$LIMIT" \
  python3 -m agent bench "$BENCH/problems" --backend compiler --samples 1 --k 1 \
  --jobs-per-gpu 8 --stop-grace 10 --out "$BENCH/out" >"$BENCH/bench.log" 2>&1
log "bench: exit $?"
wait "$PROBE"
log "probe: exit $?"
grep -v Warning "$WORK/probe.log" | tail -n 20 >>"$LOG"
cp "$WORK/out/rows.jsonl" "$OUT/probe_rows.jsonl" 2>/dev/null
cp "$WORK/out/summary.md" "$OUT/probe_summary.md" 2>/dev/null
python3 benchmarks/depth_scaling.py --profile-summary "$WORK/keep" >"$OUT/probe_profiles.jsonl" 2>>"$LOG"
tail -n 30 "$BENCH/bench.log" | grep -v Warning >>"$LOG"
python3 - "$BENCH/out" >"$OUT/bench_phases.md" 2>>"$LOG" <<'EOF'
import json, sys
from pathlib import Path
rows = []
for f in sorted(Path(sys.argv[1]).rglob("sample.json")):
    r = json.loads(f.read_text())
    rows.append(r)
    print(f"## {r['problem']}: {r['status']}, wall {r.get('wall_s')} s, draft {r.get('draft_s')} s, "
          f"evaluation {r.get('duration_s')} s")
    for k, v in sorted((r.get("phases") or {}).items()):
        print(f"- {k}: {v}")
print(f"\n{len(rows)} network(s) with a verdict")
EOF
python3 benchmarks/depth_scaling.py --profile-summary "$BENCH/profiles" >"$OUT/bench_profiles.jsonl" 2>>"$LOG"
tar czf "$OUT/bench_depth.tgz" -C "$BENCH" out bench.log 2>>"$LOG"
log "finished; $(find "$BENCH/profiles" -name '*.pstats' | wc -l) job profiles summarised"
