#!/usr/bin/env bash
# Our timing beside KernelBench's, on one GPU, in under two minutes (nvidia-h200):
#   run(command="bash benchmarks/gpu_protocols.sh", carry=[".whl", ".kb"], timeout_s=180)
# 1. `profile --protocol kernelbench` of three example kernels (relu, softmax, layernorm): ours
#    (median of padded, L2-flushed CUDA events, two agreeing sequences) and KernelBench's (3
#    warm-ups, 100 event-bracketed trials on the same inputs, mean and std), both against eager;
#    the relu one also writes its profiler pass as a Chrome trace (--trace).
# 2. A KernelBench bench of one level-1 id under the kernelbench protocol, its candidate replayed
#    from session 4's compiler kernel (benchmarks/results/kernelbench_export_h200_s4: drafting it
#    again took 10-76 s), stopped by SIGINT at BENCH_S seconds (the report written), exported in
#    KernelBench's layout (--export-kernelbench), with its report.html.
# $OUT (at most 8 files): protocols.md (the table), protocols.json (every profile result),
#   trace_relu.json, kb_export.tgz (runs/<run>/level_1_problem_<id>_sample_0_kernel.py,
#   eval_results.json, baseline_time_torch.json, the bench's report.md/.json/.html), log.txt.
# Environment: KB_ID [12] a level-1 id with a kernel in that export, BENCH_S [60].
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
KB_ID=${KB_ID:-12}
BENCH_S=${BENCH_S:-60}
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$LOG" 2>&1

WORK=$(mktemp -d)
for name in relu softmax layernorm; do
  trace=()
  [ "$name" = relu ] && trace=(--trace "$OUT/trace_relu.json")
  log "profile $name"
  timeout 40 python3 -m agent profile "examples/problems/$name.py" "examples/kernels/$name.py" \
    --protocol kernelbench "${trace[@]}" --json >"$WORK/$name.out" 2>>"$LOG"
  log "profile $name: exit $?"
done

log "bench level 1 id $KB_ID (session 4's kernel replayed, kernelbench protocol)"
python3 - "$KB_ID" "$WORK/replies.jsonl" <<'PY' 2>>"$LOG"
import json, sys
kid, out = sys.argv[1], sys.argv[2]
src = open("benchmarks/results/kernelbench_export_h200_s4/runs/triton_agent_compiler_h200_s4/"
           f"level_1_problem_{kid}_sample_0_kernel.py").read()
open(out, "w").write(json.dumps({"text": "```python\n" + src + "\n```\n"}) + "\n")
PY
timeout --signal=INT --kill-after=20 "$BENCH_S" python3 -m agent bench --kernelbench .kb --level 1 \
  --problems "$KB_ID" --replies "$WORK/replies.jsonl" --samples 1 --protocol kernelbench \
  --out "$WORK/bench" --stop-grace 5 >>"$LOG" 2>&1
log "bench: exit $?"
python3 -m agent bench --rebuild "$WORK/bench" --level 1 \
  --export-kernelbench "$WORK/kb/runs/triton_agent_compiler_level1" >>"$LOG" 2>&1
log "export: exit $?"
cp "$WORK"/bench/report.* "$WORK/kb/" 2>/dev/null
tar -czf "$OUT/kb_export.tgz" -C "$WORK/kb" . 2>>"$LOG"

python3 - "$WORK" "$OUT" <<'EOF' 2>>"$LOG"
import json, sys
from pathlib import Path
work, out = Path(sys.argv[1]), Path(sys.argv[2])
rows, results = [], {}
for f in sorted(work.glob("*.out")):
    lines = [l for l in f.read_text().splitlines() if l.strip().startswith("{")]
    if not lines:
        rows.append(f"| {f.stem} | no result | | | | |")
        continue
    r = json.loads(lines[-1])
    results[f.stem] = r
    kb = r.get("kernelbench") or {}
    ours_c, ours_e = (r.get("candidate") or {}), (r.get("eager") or {})
    sp = (r.get("speedup_eager") or {}).get("value")
    c, e = kb.get("candidate") or {}, kb.get("eager") or {}
    fmt = lambda s: f"{s['mean']:.4f} ± {s['std']:.4f}" if "mean" in s else "-"
    rows.append(
        f"| {f.stem} | {r.get('status')} | {ours_c.get('median_ms', float('nan')):.4f} / "
        f"{ours_e.get('median_ms', float('nan')):.4f} | {sp and round(sp, 2)}x | {fmt(c)} / "
        f"{fmt(e)} | {kb.get('speedup') and round(kb['speedup'], 2)}x |"
    )
(out / "protocols.json").write_text(json.dumps(results, indent=1))
head = [
    "# Our timing vs KernelBench's (same job, same GPU)",
    "",
    "ours: median ms of padded CUDA events, L2 flushed before each repetition (candidate / eager);"
    " KernelBench: mean ± std ms of 100 event-bracketed trials after 3 warm-ups, same inputs, no"
    " flush, host launch cost inside the bracket.",
    "",
    "| problem | status | ours ms cand / eager | ours speedup | KernelBench ms cand / eager |"
    " KernelBench speedup |",
    "|---|---|---|---|---|---|",
]
(out / "protocols.md").write_text("\n".join(head + rows) + "\n")
print("\n".join(head + rows))
EOF
log "done"
