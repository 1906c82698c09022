#!/usr/bin/env bash
# The fp32 contract's any-order rule (session 17, issues 34/35: tools/checks/fp64_rule.py ORDER_FACTOR,
# docs/verification.md "Any order, not PyTorch's") on one H200, about 3-4 minutes:
#   1. benchmarks/allowance_calibration.py --device cuda: every output's verdict now and before
#      (PyTorch's draws alone), its worst error over F = max(D, 8 C), D and C; expected: the
#      Triton ieee dot, the FMA chain, tf32x3 and fp64 accumulation `ok` on "gemm", "k32",
#      "k32 x100" and "kb14" (level2/14 at its published width); 15-bit outputs, bf16x3 products
#      and TF32 inputs refused on the GEMMs (the verdict or the precision check column).
#   2. benchmarks/gpu_fp64_rule.sh ROUNDS='1 2': level2/14's four honest kernels through the
#      verifier twice (ieee, tf32x3, colsum, colsum64): expected `ok` all eight (were: only ieee).
#   3. benchmarks/gpu_arithmetic.py: the example matmul (ieee) `ok` (was a coin toss), the
#      bf16x3 convolution still refused.
#   4. The corpus's device memos' honest twins (memo branch disabled, the sed lines of
#      benchmarks/gpu_s16_call2.sh) verified 4 times each on examples/problems/matmul.py with
#      the default scale trials (x100): expected `ok` 8 of 8 (were refused at x100 now and then).
# Run from the repo root with the wheels in .whl/ and the KernelBench problems in .kb/:
#
#   run(command="bash benchmarks/gpu_fp32_rule_check.sh", carry=[".whl", ".kb"], timeout_s=300)
#
# $OUT gets (7 files): fp32_rule_check.txt (the summary: every verdict, one line each),
# allowance_calibration.md, fp64_rule.txt, fp64_rule.jsonl, gpu_arithmetic.{json,md},
# memo_twins.jsonl (the twins' verdict JSON lines).
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/fp32_rule_check.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >>"$LOG" 2>&1

log "1+2: allowance calibration on cuda, level2/14 through the verifier (ROUNDS='1 2'), at once"
timeout 200 python3 benchmarks/allowance_calibration.py --device cuda --seeds 2 \
  --out "$OUT/allowance_calibration.md" >/tmp/fp32cal.out 2>&1 &
CAL=$!
ROUNDS='1 2' timeout 150 bash benchmarks/gpu_fp64_rule.sh >/tmp/fp64rule.out 2>&1
log "gpu_fp64_rule.sh rc=$?"
cat "$OUT/fp64_rule.txt" | cut -c1-400 >>"$LOG" 2>/dev/null

log "3+4: gpu_arithmetic.py and the memo twins (4 verifications each), at once"
timeout 170 python3 benchmarks/gpu_arithmetic.py --out "$OUT" >/tmp/arith.out 2>&1 &
AR=$!
MEMO=$(mktemp -d)
PIDS=()
for kind in memo_device_flag memo_device_loop_bound; do
  sed -e 's/if tl.load(flag_ptr) == 0:/if tl.load(flag_ptr) == -123456789:/' \
    -e 's/steps = tl.load(steps_ptr)  # 0 on/steps = tl.load(steps_ptr) * 0 + tl.cdiv(K, BK)  # 0 on/' \
    "tests/adversarial/matmul__$kind.py" >"$MEMO/${kind}_twin.py"
  if cmp -s "tests/adversarial/matmul__$kind.py" "$MEMO/${kind}_twin.py"; then
    log "$kind: the sed line no longer matches the memo's code: no twin"
    continue
  fi
  for i in 1 2 3 4; do
    ( timeout 150 python3 -m agent verify examples/problems/matmul.py "$MEMO/${kind}_twin.py" \
        --device cuda --policy strict --json >"$MEMO/$kind.$i.out" 2>"$MEMO/$kind.$i.err" ) &
    PIDS+=($!)
  done
done
[ ${#PIDS[@]} -gt 0 ] && wait "${PIDS[@]}"
log "memo twins verified"
for kind in memo_device_flag memo_device_loop_bound; do
  for i in 1 2 3 4; do
    f=$MEMO/$kind.$i.out
    [ -f "$f" ] || continue
    line=$(grep '^{' "$f" | tail -1)
    if [ -z "$line" ]; then
      echo "${kind}_twin run $i: no verdict: $(tail -c 300 "$MEMO/$kind.$i.err")" >>"$LOG"
      continue
    fi
    echo "$line" >>"$OUT/memo_twins.jsonl"
    printf '%s\n' "$line" | python3 -c "
import json, sys
v = json.loads(sys.stdin.read())
print('${kind}_twin run $i:', v.get('status'), '|', str(v.get('message'))[:400])" >>"$LOG"
  done
done
wait $AR
log "gpu_arithmetic.py rc=$?"
python3 - "$OUT/gpu_arithmetic.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
try:
    rows = json.load(open(sys.argv[1]))
except Exception as e:  # noqa: BLE001
    print("gpu_arithmetic.json unreadable:", e)
    raise SystemExit
for r in rows.get("rows", []):
    print("arithmetic:", r.get("candidate") or r.get("name"), r.get("status"), "|",
          str(r.get("message") or "")[:200])
PY
wait $CAL
log "allowance_calibration rc=$?"
grep '^| ' "$OUT/allowance_calibration.md" >>"$LOG" 2>/dev/null || tail -c 1500 /tmp/fp32cal.out >>"$LOG"
log "done"
