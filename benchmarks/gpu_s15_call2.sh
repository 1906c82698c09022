#!/usr/bin/env bash
# Session 15, device call 2 (one H200, about 9.5 minutes), from a snapshot of HEAD (.gpu_snap),
# with the session-13 verifier (commit cf2ab9c, before issue 34) beside it in .gpu_before:
#   - all along (0-540 s): `agent bench` on eight level-3 networks (LEVEL3_ONLY), 4 jobs;
#   - first (to ~230 s): the cost of verification, before (cf2ab9c) against now, each pair at
#     once (benchmarks/gpu_verify_cost.py): six examples and five KernelBench level-1 problems
#     at their published sizes with a candidate each (.kb/cost, from session 13's merged bench);
#   - then (to ~560 s): benchmarks/gpu_verifier.sh (the adversarial corpus on CUDA, Liger's
#     honest ops, the sanitizer pair, honest examples) beside issue 34's GPU tests and the
#     attention kernel's check, and KernelBench's own judge on an exported run (issue 38; its
#     problems and code carried in .kb/kb and .kb/kernelbench-eval).
# Everything shares the GPU and its cores: the cost figures are ratios under the same load, the
# level-3 times are not a speed record.
#
#   run(command="cd .gpu_snap && ln -sfn ../.whl .whl && ln -sfn ../.kb .kb && bash
#       benchmarks/gpu_s15_call2.sh", carry=[".whl", ".kb", ".gpu_snap", ".gpu_before"],
#       kind="nvidia-h200", timeout_s=600)
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
export OUT
LOG=$OUT/call2.txt
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
LEVEL3_ONLY=${LEVEL3_ONLY:-13_DenseNet121TransitionLayer,14_DenseNet121DenseBlock,17_SqueezeNetFireModule,21_EfficientNetMBConv,33_VanillaRNN,3_DeepNarrowMLP,50_ReLUSelfAttention,6_GoogleNetInceptionModule}
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)"; [ -f ../.gpu_before/COMMIT ] && echo "before: $(cat ../.gpu_before/COMMIT)"; } >>"$LOG"

mkdir -p "$OUT/kb"
OUT=$OUT/kb LEVELS=level3 JOBS_PER_GPU=4 DEADLINE_S=$((540 - (SECONDS - START))) \
  BENCH_ARGS="--timeout 300 --only=$LEVEL3_ONLY" bash benchmarks/gpu_kernelbench.sh >/tmp/kb.stdout 2>&1 &
K=$!

log "verification cost: before (cf2ab9c) and now, each pair at once"
timeout $((230 - (SECONDS - START))) python3 benchmarks/gpu_verify_cost.py --before ../.gpu_before \
  --after . --kb .kb/cost --trials 5 --out "$OUT/verify_cost.json" >>"$LOG" 2>&1
log "verification cost: rc=$?"

log "corpus, Liger, sanitizer, honest examples; the attention check"
CAP_S=$((550 - (SECONDS - START))) ADV_JOBS_PER_GPU=6 bash benchmarks/gpu_verifier.sh >/tmp/verifier.stdout 2>&1 &
V=$!
# issue 38: KernelBench's own eval_from_generations on a run we exported (level 1: 20, 21, 22)
if [ -d .kb/kernelbench-eval ]; then
  timeout 210 python3 benchmarks/kernelbench_roundtrip.py --out "$OUT" >/tmp/roundtrip.txt 2>&1 &
  R=$!
fi
# issue 34's in-process CUDA paths (the compute block at the CUDA key, the judgement order,
# allow-library: from benchmarks/gpu_issue34.sh), then the attention kernel's check
timeout 120 python3 -m pytest -q -n 0 -p no:cacheprovider tests/test_compute_block.py \
  tests/test_verify_issue34_causes.py \
  "tests/test_verify.py::test_library_calls_accepted_as_mixed_under_allow_library" \
  >/tmp/issue34_tests.txt 2>&1
log "issue 34 GPU tests rc=$?"
tail -n 40 /tmp/issue34_tests.txt >>"$LOG"
if [ -f benchmarks/gpu_attention.py ]; then
  timeout 120 python3 benchmarks/gpu_attention.py --no-sweep >/tmp/attention.txt 2>&1
  log "attention check rc=$?"
  tail -n 30 /tmp/attention.txt >>"$LOG"
fi
if [ -n "${R:-}" ]; then
  wait $R
  log "KernelBench round trip rc=$?"
  tail -n 30 /tmp/roundtrip.txt >>"$LOG"
fi
wait $V
log "verifier done"
tar czf "$OUT/verifier.tgz" -C "$OUT" adversarial_cuda.log adversarial_cuda.json liger.json \
  sanitize_ok.json sanitize_oob.json 2>/dev/null &&
  rm -f "$OUT"/adversarial_cuda.* "$OUT"/liger.json "$OUT"/sanitize_*.json
wait $K
log "level-3 bench done"
tail -n 30 /tmp/kb.stdout >>"$OUT/kb/log.txt"
tar czf "$OUT/kb.tgz" -C "$OUT" kb && rm -rf "$OUT/kb"
ls -la "$OUT" | tee -a "$LOG"
