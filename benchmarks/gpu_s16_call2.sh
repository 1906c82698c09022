#!/usr/bin/env bash
# Session 16, device call 2 (one H200, about 9.5 minutes), from a snapshot of HEAD (.gpu_snap),
# with the session-13 verifier (commit cf2ab9c) beside it in .gpu_before. All at once:
#   - KernelBench's own judge on a run we exported (issue 38, item 1), its pool now spawning
#     (call 1: every sample "Cannot re-initialize CUDA in forked subprocess");
#   - the cost of verification, before (cf2ab9c) against now, each pair at once, on the four
#     KernelBench problems not yet measured (call 1 cut the lane at 240 s with no pair done:
#     now each verification may take 170 s and a timeout is a row);
#   - the timing job's repeat check: the corpus's device-flag memos profiled (expected refused,
#     cheat) against their honest twins (expected ok or slower), on a 1024^3 matmul;
#   - benchmarks/gpu_verifier.sh: the adversarial corpus on CUDA with this session's scale trial
#     and precision sample (no false rejects?), Liger's honest ops, sanitizer, honest examples.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s16_call2.sh", carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"],
#       kind="nvidia-h200", timeout_s=600)
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/call2.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; [ -f ../.gpu_before/COMMIT ] && echo "before: $(cat ../.gpu_before/COMMIT)"; } >>"$LOG"

timeout 500 python3 benchmarks/kernelbench_roundtrip.py --out "$OUT" >/tmp/roundtrip.txt 2>&1 &
R=$!
mkdir -p /tmp/cost && for p in 49_Max_reduction_over_a_dimension 35_GroupNorm_ \
  82_conv_depthwise_2D_square_input_square_kernel 20_LeakyReLU; do
  cp .kb/cost/$p.py .kb/cost/${p}__kernel.py /tmp/cost/
done
timeout 530 python3 benchmarks/gpu_verify_cost.py --before ../.gpu_before --after . --kb /tmp/cost \
  --trials 5 --timeout 170 --out "$OUT/verify_cost.json" >/tmp/cost.txt 2>&1 &
C=$!
CAP_S=420 ADV_JOBS_PER_GPU=6 bash benchmarks/gpu_verifier.sh >/tmp/verifier.stdout 2>&1 &
V=$!

log "the repeat check: device-flag memos against their honest twins"
mkdir -p /tmp/memo
sed 's/^M = 67$/M = 1024/; s/^K = 129$/K = 1024/; s/^N = 95$/N = 1024/' examples/problems/matmul.py >/tmp/memo/matmul1024.py
for kind in memo_device_flag memo_device_loop_bound; do
  f=tests/adversarial/matmul__$kind.py
  cp "$f" /tmp/memo/$kind.py
  sed -e 's/if tl.load(flag_ptr) == 0:/if tl.load(flag_ptr) == -123456789:/' \
    -e 's/steps = tl.load(steps_ptr)  # 0 on/steps = tl.load(steps_ptr) * 0 + tl.cdiv(K, BK)  # 0 on/' \
    "$f" >/tmp/memo/${kind}_twin.py
  for k in $kind ${kind}_twin; do
    timeout 150 python3 -m agent profile /tmp/memo/matmul1024.py /tmp/memo/$k.py --device cuda \
      --no-compile --json 2>/tmp/memo/$k.err | tail -1 >"/tmp/memo/$k.json"
    python3 - "$k" /tmp/memo/$k.json >>"$LOG" 2>&1 <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[2]).read())
except Exception as e:
    print(sys.argv[1], "no JSON:", e); raise SystemExit
fresh = r.get("freshness") or {}
print(sys.argv[1], "status", r.get("status"), "| candidate", (r.get("candidate") or {}).get("median_ms"),
      "ms | repeat", json.dumps(fresh.get("repeat")), "|", (r.get("message") or "")[:200])
PY
  done
done
tar czf "$OUT/memo.tgz" -C /tmp memo

wait $C
log "verification cost rc=$?"
cat /tmp/cost.txt >>"$LOG"
wait $R
log "KernelBench round trip rc=$?"
tail -n 40 /tmp/roundtrip.txt >>"$LOG"
wait $V
log "verifier done"
tar czf "$OUT/verifier.tgz" -C "$OUT" verifier.txt adversarial_cuda.log adversarial_cuda.json liger.json \
  sanitize_ok.json sanitize_oob.json 2>/dev/null &&
  rm -f "$OUT"/verifier.txt "$OUT"/adversarial_cuda.* "$OUT"/liger.json "$OUT"/sanitize_*.json
tail -n 25 /tmp/verifier.stdout >>"$LOG"
ls -la "$OUT" | tee -a "$LOG"
