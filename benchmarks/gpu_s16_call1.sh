#!/usr/bin/env bash
# Session 16, device call 1 (one H200, about 9.5 minutes), from a snapshot of HEAD (.gpu_snap),
# with the session-13 verifier (commit cf2ab9c) beside it in .gpu_before:
#   - all along (0-480 s): KernelBench's own judge on a run we exported (issue 38, item 1:
#     benchmarks/kernelbench_roundtrip.py, level 1 problems 20, 21, 22; KernelBench's problems
#     and code carried in .kb/kb and .kb/kernelbench-eval);
#   - first (to ~240 s): the cost of verification, before (cf2ab9c) against now, each pair at
#     once (benchmarks/gpu_verify_cost.py), on the four KernelBench problems session 15 did not
#     reach (.kb/cost: session 13's candidate for each);
#   - then: benchmarks/gpu_verifier.sh (the adversarial corpus on CUDA, Liger's honest ops,
#     the sanitizer pair, honest examples) beside issue 34's in-process GPU tests (the two that
#     failed in session 15 included) and the device-flag memo check: the memo kernels of the
#     corpus profiled against themselves with the memo branch disabled, on a 1024^3 matmul (does
#     the timing job's fresh data keep the memo from firing?).
# Everything shares the GPU and its cores: cost figures are ratios under the same load.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s16_call1.sh", carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"],
#       kind="nvidia-h200", timeout_s=600)
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/call1.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; [ -f ../.gpu_before/COMMIT ] && echo "before: $(cat ../.gpu_before/COMMIT)"; } >>"$LOG"

# issue 38: KernelBench's own eval_from_generations on a run we exported
timeout 480 python3 benchmarks/kernelbench_roundtrip.py --out "$OUT" >/tmp/roundtrip.txt 2>&1 &
R=$!

log "verification cost: before (cf2ab9c) and now, each pair at once"
timeout 240 python3 benchmarks/gpu_verify_cost.py --before ../.gpu_before --after . --kb .kb/cost \
  --trials 5 --out "$OUT/verify_cost.json" \
  --only 20_LeakyReLU,35_GroupNorm_,49_Max_reduction_over_a_dimension,82_conv_depthwise_2D_square_input_square_kernel \
  >>"$LOG" 2>&1
log "verification cost: rc=$?"

log "corpus, Liger, sanitizer, honest examples; issue 34 GPU tests; memo check"
CAP_S=$((540 - (SECONDS - START))) ADV_JOBS_PER_GPU=6 bash benchmarks/gpu_verifier.sh >/tmp/verifier.stdout 2>&1 &
V=$!
timeout 150 python3 -m pytest -q -n 0 -p no:cacheprovider tests/test_compute_block.py \
  tests/test_verify_issue34_causes.py tests/test_address_space_cap.py \
  "tests/test_verify.py::test_library_calls_accepted_as_mixed_under_allow_library" \
  >/tmp/issue34_tests.txt 2>&1
log "issue 34 GPU tests rc=$?"
tail -n 60 /tmp/issue34_tests.txt >>"$LOG"

# the memo kinds: profiled as written, and with the memo branch never taken (the honest twin)
mkdir -p /tmp/memo
sed 's/^M = 67$/M = 1024/; s/^K = 129$/K = 1024/; s/^N = 95$/N = 1024/' examples/problems/matmul.py >/tmp/memo/matmul1024.py
for kind in memo_device_flag memo_device_loop_bound; do
  f=tests/adversarial/matmul__$kind.py
  cp "$f" /tmp/memo/$kind.py
  sed -e 's/if tl.load(flag_ptr) == 0:/if tl.load(flag_ptr) == -123456789:/' \
    -e 's/steps = tl.load(steps_ptr)  # 0 on/steps = tl.load(steps_ptr) * 0 + tl.cdiv(K, BK)  # 0 on/' \
    "$f" >/tmp/memo/${kind}_twin.py
  cmp -s "$f" /tmp/memo/${kind}_twin.py && echo "($kind: the twin edit did not apply)" >>"$LOG"
  for k in $kind ${kind}_twin; do
    timeout 100 python3 -m agent profile /tmp/memo/matmul1024.py /tmp/memo/$k.py --device cuda \
      --no-compile --json 2>/tmp/memo/$k.err | tail -1 >"/tmp/memo/$k.json"
    python3 - "$k" /tmp/memo/$k.json >>"$LOG" 2>&1 <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[2]).read())
except Exception as e:
    print(sys.argv[1], "no JSON:", e); raise SystemExit
v = r.get("verdict") or {}
print(sys.argv[1], "status", v.get("status") or r.get("status"), "candidate_ms", r.get("candidate_ms"),
      "eager_ms", r.get("eager_ms"), "speedup_vs_eager", r.get("speedup_vs_eager"),
      "| keys:", ",".join(sorted(r))[:300])
PY
  done
done
tar czf "$OUT/memo.tgz" -C /tmp memo

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
