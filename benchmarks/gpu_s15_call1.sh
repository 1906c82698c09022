#!/usr/bin/env bash
# Session 15, device call 1 (one H200, about 9.5 minutes): issue 34's corpus and issue 33's
# level-3 networks at once.
#   - benchmarks/gpu_verifier.sh (CAP_S=430, 6 corpus jobs): the adversarial corpus on CUDA,
#     Liger-Kernel's honest ops, the sanitizer pair, honest examples through other launch paths;
#   - beside it, benchmarks/gpu_kernelbench.sh on ../shared/kernelbench/level3 (36 networks,
#     carried as .kb/level3), 8 verification jobs, a 560 s deadline.
# The two share the GPU and its 16 cores: the level-3 speedups of this call are not a record
# (timing ran beside the corpus); verdicts and wall time per network are what it is for.
#
#   run(command="bash benchmarks/gpu_s15_call1.sh", carry=[".whl", ".kb"], kind="nvidia-h200",
#       timeout_s=600)
set -u
source "$(dirname "$0")/_gpu_env.sh" # install the wheels once, before both start
export OUT
CAP_S=430 ADV_JOBS_PER_GPU=6 bash benchmarks/gpu_verifier.sh >/tmp/verifier.stdout 2>&1 &
V=$!
LEVELS=level3 JOBS_PER_GPU=8 DEADLINE_S=560 BENCH_ARGS="--timeout 300" \
  bash benchmarks/gpu_kernelbench.sh >/tmp/kb.stdout 2>&1 &
K=$!
wait $V
# the device tool returns at most 8 files: the verifier's side as one tarball beside its log
tar czf "$OUT/verifier.tgz" -C "$OUT" adversarial_cuda.log adversarial_cuda.json liger.json \
  sanitize_ok.json sanitize_oob.json 2>/dev/null &&
  rm -f "$OUT"/adversarial_cuda.* "$OUT"/liger.json "$OUT"/sanitize_*.json
wait $K
tail -n 30 /tmp/kb.stdout >>"$OUT/log.txt"
ls -la "$OUT"
