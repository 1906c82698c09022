#!/usr/bin/env bash
# Issue 15 item 1 on the GPU: a handful of KernelBench level-1 convolutions at their published
# sizes, drafted by the compiler drafter on CUDA (Inductor's Triton + this project's Triton
# convolutions, tools/triton_conv.py, where Inductor would call a library conv), then
# `agent profile` under the strict policy: it verifies on CUDA first (the verdict is in its JSON;
# incorrect kernels are never timed), then times the candidate against eager and torch.compile.
#
#   run(command="bash benchmarks/gpu_conv.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=200)
#
# Environment (defaults in brackets):
#   DEADLINE_S [170]   no new problem starts after DEADLINE_S - 45 seconds; each step has its own
#                      timeout so the script ends by DEADLINE_S
#   PROBLEMS ["57 64 67 82 87 50 54"]  level-1 problem numbers, in this order (cheap first)
#   KB_DIR [.kb]       KernelBench copy (`cp -r ../shared/kernelbench .kb`)
#   TRIALS [2]         verification trials in `agent profile`
#   PROFILE_ARGS []    more `agent profile` flags (e.g. "--no-compile" to skip the compile baseline)
# $OUT gets: conv_table.md (one row a problem), log.txt, env.txt, and per problem
# <n>_draft.json (notes, kernels, library calls), <n>_candidate.py, <n>_profile.json.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-170}
PROBLEMS=${PROBLEMS:-"57 64 67 82 87 50 54"}
KB_DIR=${KB_DIR:-.kb}
TRIALS=${TRIALS:-2}
PROFILE_ARGS=${PROFILE_ARGS:-}
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
left() { echo $((DEADLINE_S - (SECONDS - START))); }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "DEADLINE_S=$DEADLINE_S PROBLEMS=$PROBLEMS TRIALS=$TRIALS PROFILE_ARGS=$PROFILE_ARGS"
} >"$OUT/env.txt" 2>&1

TABLE=$OUT/conv_table.md
{
  echo "| problem | conv kernels | verdict | candidate ms | eager ms | compile ms | x eager | x compile | x best |"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$TABLE"

for n in $PROBLEMS; do
  problem=$(ls "$KB_DIR"/level1/"${n}"_*.py 2>/dev/null | head -1)
  if [ -z "$problem" ]; then
    log "$n: no problem file in $KB_DIR/level1"
    continue
  fi
  if [ "$(left)" -lt 45 ]; then
    log "$n: skipped, $(left) s left"
    echo "| $(basename "$problem" .py) | | skipped (time) | | | | | | |" >>"$TABLE"
    continue
  fi
  name=$(basename "$problem" .py)
  cand=$OUT/${n}_candidate.py
  # the draft: Inductor on CUDA (its autotuning included), the convolution hook applied
  timeout $(($(left) - 25)) python3 - "$problem" "$cand" "$OUT/${n}_draft.json" <<'EOF' >>"$LOG" 2>&1
import json, sys
from tools.inductor_draft import draft_candidate
problem, cand, meta = sys.argv[1:]
r = draft_candidate(open(problem).read(), device="cuda")
open(cand, "w").write(r.source)
json.dump({"kernels": r.kernels, "library_calls": r.library_calls, "notes": r.notes,
           "conv_kernels": [k for k in ("_conv_gemm_kernel", "_conv_direct_kernel")
                            if f"def {k}(" in r.source and "triton_convolution(" in r.source]},
          open(meta, "w"))
EOF
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$cand" ]; then
    log "$name: draft failed (rc=$rc)"
    echo "| $name | | draft failed (rc=$rc) | | | | | | |" >>"$TABLE"
    continue
  fi
  log "$name: drafted"
  timeout $(($(left) - 5)) python3 -m agent profile "$problem" "$cand" --json --device cuda \
    --policy strict --trials "$TRIALS" $PROFILE_ARGS >"$OUT/${n}_profile.out" 2>>"$LOG"
  rc=$?
  tail -1 "$OUT/${n}_profile.out" >"$OUT/${n}_profile.json"
  rm -f "$OUT/${n}_profile.out"
  python3 - "$name" "$OUT/${n}_draft.json" "$OUT/${n}_profile.json" "$rc" <<'EOF' >>"$TABLE" 2>>"$LOG"
import json, sys
name, draft, prof, rc = sys.argv[1:]
d = json.load(open(draft))
try:
    p = json.load(open(prof))
except Exception:
    print(f"| {name} | {', '.join(d['conv_kernels']) or 'Inductor template'} | profile rc={rc}, no JSON | | | | | | |")
    raise SystemExit
v = p.get("verdict") or {}
def ms(k):
    s = p.get(k) or {}
    return f"{s['median_ms']:.3f}" if s.get("median_ms") is not None else ""
def x(k):
    s = p.get(k) or {}
    return f"{s['value']:.2f}" if s.get("value") is not None else ""
e, c = (p.get("eager") or {}).get("median_ms"), (p.get("compiled") or {}).get("median_ms")
cand = (p.get("candidate") or {}).get("median_ms")
best = f"{min(t for t in (e, c) if t) / cand:.2f}" if cand and (e or c) else ""
status = f"{v.get('status', '?')} / {p.get('status', '?')}"
print(f"| {name} | {', '.join(d['conv_kernels']) or 'Inductor template'} | {status} | {ms('candidate')} "
      f"| {ms('eager')} | {ms('compiled')} | {x('speedup_eager')} | {x('speedup_compile')} | {best} |")
EOF
  log "$name: profiled (rc=$rc)"
done
log "done"
cat "$TABLE" | tee -a "$LOG"
