#!/usr/bin/env bash
# Issue 15 item 1 on the GPU: a handful of KernelBench level-1 convolutions at their published
# sizes, drafted by the compiler drafter on CUDA (Inductor's Triton + this project's Triton
# convolutions, tools/kernels/triton_conv.py, where Inductor would call a library conv), then
# `agent profile` under the strict policy: it verifies on CUDA first (the verdict is in its JSON;
# incorrect kernels are never timed), then times the candidate against eager and torch.compile.
#
#   run(command="bash benchmarks/gpu_conv.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=200)
#
# Environment (defaults in brackets):
#   DEADLINE_S [170]   no new problem starts after DEADLINE_S - 45 seconds; each step has its own
#                      timeout so the script ends by DEADLINE_S
#   PROBLEMS ["64 57 81 67 82 87 54"]  level-1 problem numbers, in this order: transposed 1D and
#                      2D, strided transposed 2D (stride 5: the phased kernel), 1D, depthwise,
#                      pointwise, 3D; the later ones are skipped when time runs out
#   TF32 [1]           1: PyTorch's defaults (the judge computes its reference with TF32 off
#                      itself, tools.checks.precision.full_fp32; the eager and compile baselines keep
#                      cuDNN's TF32, as a user's eager would). 0: NVIDIA_TF32_OVERRIDE=0, so the
#                      baselines' cuDNN convs run in full fp32 too (the fp32-to-fp32 comparison).
#   KB_DIR [.kb]       KernelBench copy (`cp -r ../shared/kernelbench .kb`)
#   TRIALS [2]         verification trials in `agent profile`
#   PROFILE_ARGS []    more `agent profile` flags (e.g. "--no-compile" to skip the compile baseline)
#   DEVICE [cuda]      cpu only to try the script's plumbing without a GPU (tiny problems)
# $OUT gets: conv_table.md (one row a problem), log.txt, env.txt, and per problem
# <n>_draft.json (notes, kernels, library calls), <n>_candidate.py, <n>_profile.json.
set -u
START=$SECONDS
DEADLINE_S=${DEADLINE_S:-170}
PROBLEMS=${PROBLEMS:-"64 57 81 67 82 87 54"}
KB_DIR=${KB_DIR:-.kb}
TRIALS=${TRIALS:-2}
PROFILE_ARGS=${PROFILE_ARGS:-}
TF32=${TF32:-1}
export DEVICE=${DEVICE:-cuda}
[ "$TF32" = 0 ] && export NVIDIA_TF32_OVERRIDE=0
source "$(dirname "$0")/_gpu_env.sh" # wheels -> /tmp/site, PYTHONPATH, $OUT
LOG=$OUT/log.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
left() { echo $((DEADLINE_S - (SECONDS - START))); }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "no nvidia-smi"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__,
"cudnn.allow_tf32", torch.backends.cudnn.allow_tf32)'
  echo "DEADLINE_S=$DEADLINE_S PROBLEMS=$PROBLEMS TRIALS=$TRIALS PROFILE_ARGS=$PROFILE_ARGS" \
    "TF32=$TF32 NVIDIA_TF32_OVERRIDE=${NVIDIA_TF32_OVERRIDE:-unset}"
} >"$OUT/env.txt" 2>&1

TABLE=$OUT/conv_table.md
{
  echo "fp32, strict policy, TF32=$TF32 (NVIDIA_TF32_OVERRIDE=${NVIDIA_TF32_OVERRIDE:-unset});" \
    "verdict = verification / profile status; x best = over the faster of eager and compile"
  echo
  echo "| problem | conv kernel(s) that ran | verdict | candidate ms | eager ms | compile ms | x eager | x compile | x best |"
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
import json, os, sys
from tools.draft import draft_candidate
problem, cand, meta = sys.argv[1:]
r = draft_candidate(open(problem).read(), device=os.environ.get("DEVICE", "cuda"))
open(cand, "w").write(r.source)
json.dump({"kernels": r.kernels, "library_calls": r.library_calls, "notes": r.notes,
           "triton_convolution": "triton_convolution(" in r.source}, open(meta, "w"))
EOF
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$cand" ]; then
    log "$name: draft failed (rc=$rc)"
    echo "| $name | | draft failed (rc=$rc) | | | | | | |" >>"$TABLE"
    continue
  fi
  log "$name: drafted"
  timeout $(($(left) - 5)) python3 -m agent profile "$problem" "$cand" --json --device "$DEVICE" \
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
    print(f"| {name} | | profile rc={rc}, no JSON | | | | | | |")
    raise SystemExit
v = p.get("verdict") or {}
# the conv kernels that ran (the verification's audit), else what the draft holds
ran = ((v.get("evidence") or {}).get("audit") or {}).get("kernels") or []
conv = [k for k in ran if k.startswith("_conv_")] or [k for k in ran if "_tem_" in k]
if not conv:
    conv = ["triton_convolution"] if d["triton_convolution"] else d["kernels"][:1]
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
print(f"| {name} | {', '.join(conv)} | {status} | {ms('candidate')} "
      f"| {ms('eager')} | {ms('compiled')} | {x('speedup_eager')} | {x('speedup_compile')} | {best} |")
EOF
  log "$name: profiled (rc=$rc)"
done
log "done"
cat "$TABLE" | tee -a "$LOG"
