#!/usr/bin/env bash
# Real sizes on the GPU (nvidia-h200-x2, about 9 minutes): the verifier's new judge/handover
# path on the examples, on a 6.4 GB KernelBench problem (verify + profile, time and memory), the
# GPU tests of verify/compare, the adversarial corpus on CUDA, then a short compiler bench over
# KernelBench (gpu_kernelbench.sh with a deadline). Carry .whl and .kb. Everything of its own
# comes back in realsize.tgz (gpu_kernelbench.sh's 7 files beside it). SKIP_EXAMPLES=1 skips the
# examples; SKIP_LEAKY=1 the 6.4 GB problem (verify, profile with both protocols);
# SKIP_ADVERSARIAL=1 the GPU tests and the adversarial corpus; RESUME_TGZ and JOBS_PER_GPU are
# passed to gpu_kernelbench.sh.
set -u
START=$SECONDS
source "$(dirname "$0")/_gpu_env.sh"
FINAL_OUT=$OUT
OUT=/tmp/realsize; mkdir -p $OUT # packed into one file at the end: $OUT returns at most 8 files
LOG=$OUT/realsize.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
# a git-archive snapshot (.gpu_snap) has no .git of its own: its COMMIT file says what it is
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv >>"$LOG" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >>"$LOG" 2>&1
echo "CC=${CC:-} PATH=$PATH gcc=$(command -v gcc) -> $(readlink -f "$(command -v gcc)" 2>/dev/null)" >>"$LOG"

if [ -z "${SKIP_EXAMPLES:-}" ]; then
log "examples through agent verify on cuda"
for pair in relu:relu softmax:softmax; do
  p=${pair%%:*}; k=${pair##*:}
  timeout 120 python3 -m agent verify examples/problems/$p.py examples/kernels/$k.py --json --device cuda 2>>"$LOG" | tail -1 | cut -c1-300 >>"$LOG"
done
for k in relu__mismatch matmul__policy relu__crash relu__bad_input; do
  p=${k%%__*}
  timeout 120 python3 -m agent verify examples/problems/$p.py examples/broken/$k.py --json --device cuda 2>>"$LOG" | tail -1 | cut -c1-200 >>"$LOG"
done
fi # SKIP_EXAMPLES

if [ -z "${SKIP_LEAKY:-}" ]; then
log "6.4 GB: KernelBench 20_LeakyReLU, verify (5 trials) then profile, both protocols"
/usr/bin/time -v timeout 200 python3 -m agent verify .kb/level1/20_LeakyReLU.py benchmarks/kernels/kb_20_leaky_relu.py --json --device cuda >"$OUT/leaky_verify.json" 2>"$OUT/leaky_verify.err"
log "verify rc=$?"; tail -1 "$OUT/leaky_verify.json" | cut -c1-400 >>"$LOG"
grep -E "Maximum resident|Elapsed" "$OUT/leaky_verify.err" >>"$LOG"
timeout 200 python3 -m agent profile .kb/level1/20_LeakyReLU.py benchmarks/kernels/kb_20_leaky_relu.py --json >"$OUT/leaky_profile.json" 2>>"$LOG"
log "profile rc=$?"; tail -1 "$OUT/leaky_profile.json" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k: d.get(k) for k in ("status","message","speedup_eager","speedup_compile","memory","duration_s")})' >>"$LOG" 2>&1
/usr/bin/time -v timeout 200 python3 -m agent profile .kb/level1/20_LeakyReLU.py benchmarks/kernels/kb_20_leaky_relu.py --json --protocol kernelbench >"$OUT/leaky_profile_kb.json" 2>"$OUT/leaky_profile_kb.err"
log "profile --protocol kernelbench rc=$?"; tail -1 "$OUT/leaky_profile_kb.json" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k: d.get(k) for k in ("status","message","speedup_eager","speedup_compile","kernelbench","memory","duration_s")})' >>"$LOG" 2>&1
grep -E "Maximum resident|Elapsed" "$OUT/leaky_profile_kb.err" >>"$LOG"
fi # SKIP_LEAKY

if [ -z "${SKIP_ADVERSARIAL:-}" ]; then
log "GPU tests: verify, compare"
timeout 150 python3 -m pytest -q -x --no-header -p no:cacheprovider -m gpu tests/test_verify.py tests/test_compare_chunked.py 2>&1 | tail -n 5 >>"$LOG"
log "adversarial corpus on cuda"
timeout 150 python3 benchmarks/adversarial_figures.py --device cuda --no-write --json 2>>"$OUT/adv.err" | tail -1 >"$OUT/adversarial_cuda.json"
log "adversarial rc=$?"; cut -c1-600 "$OUT/adversarial_cuda.json" >>"$LOG"
fi # SKIP_ADVERSARIAL

left=$((${TOTAL_S:-570} - (SECONDS - START)))
log "kernelbench compiler bench for the remaining ${left} s"
if [ "$left" -gt 120 ]; then
  DEADLINE_S=$left OUT=$FINAL_OUT RESUME_TGZ=${RESUME_TGZ:-} JOBS_PER_GPU=${JOBS_PER_GPU:-4} bash benchmarks/gpu_kernelbench.sh >>"$LOG" 2>&1
fi
log "done"
tar czf "$FINAL_OUT/realsize.tgz" -C /tmp realsize
