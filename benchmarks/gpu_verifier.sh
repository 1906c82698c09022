#!/usr/bin/env bash
# Issue 16 (verifier hardening) on the GPU, at most about 145 s on one H200 (all parts at once,
# each cut at $CAP_S s, default 135):
#   1. the adversarial corpus on CUDA (benchmarks/adversarial_figures.py --device cuda): false
#      accepts, harness crashes and wrong statuses must all be 0 (CPU-only kinds are skipped);
#   2. at the same time, Liger-Kernel ops wrapped as ModelNew (benchmarks/liger/run_liger.py):
#      rms_norm, layer_norm, swiglu, geglu, softmax must verify ok; cross_entropy is ok or cheat
#      (Liger checks the targets with PyTorch ops, compute outside Triton under strict);
#   3. honest examples through other launch paths (Inductor-style, GEMMs) under the lock-down;
#   4. `agent verify --sanitize` of the ReLU example (compute-sanitizer memcheck + racecheck),
#      and of an out-of-bounds ReLU (no mask) that may pass the comparison: sanitizer's call.
# liger-kernel comes from its wheel in .whl/ (pip download --no-deps liger-kernel -d .whl),
# installed with the others by _gpu_env.sh. Run from the repo root:
#
#   run(command="bash benchmarks/gpu_verifier.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=200)
#
# $OUT gets 6 files (the device tool returns at most 8): verifier.txt (the log: versions, the
# isolation probe, each part's summary, failures and log tails), adversarial_cuda.log (a line per
# case), adversarial_cuda.json, liger.json, sanitize_ok.json, sanitize_oob.json.
set -u
START=$SECONDS
CAP_S=${CAP_S:-135} # seconds each part may take
source "$(dirname "$0")/_gpu_env.sh"
LOG=$OUT/verifier.txt
: >"$LOG"
log() { echo "[$((SECONDS - START)) s] $*" | tee -a "$LOG"; }
# a git-archive snapshot (.gpu_snap) has no .git of its own: its COMMIT file says what it is
{ [ -f COMMIT ] && echo "commit $(cat COMMIT) (snapshot)" || git log -1 --format='commit %H'; } >>"$LOG" 2>/dev/null
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv >>"$LOG" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >>"$LOG" 2>&1
python3 -c 'import liger_kernel, importlib.metadata as m; print("liger-kernel", m.version("liger-kernel"))' >>"$LOG" 2>&1
echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>&1)" >>"$LOG"
# What OS isolation this machine allows (docs/verification.md, "Isolation"): namespaces, seccomp,
# and whether a sandbox job really gets a network namespace of its own.
{ echo "uid $(id -u)"; grep -i seccomp /proc/self/status
  for ns in --net --mount --user; do unshare $ns true 2>/dev/null; echo "unshare $ns rc=$?"; done
  python3 -c 'import os; from tools.sandboxing.sandbox import Sandbox; o = Sandbox(device="cpu", max_workers=1).run("os:readlink", "/proc/self/ns/net", timeout=60); print("net ns: parent", os.readlink("/proc/self/ns/net"), "job", o.value or o.error[-200:])'
} >>"$LOG" 2>&1

log "all at once (one GPU): the corpus (4 jobs), Liger ops (2 jobs), two verify --sanitize"
ADV_JOBS_PER_GPU=${ADV_JOBS_PER_GPU:-4} timeout $CAP_S python3 benchmarks/adversarial_figures.py --device cuda --json --no-write \
  >"$OUT/adversarial_cuda.json" 2>"$OUT/adversarial_cuda.log" &
ADV=$!
timeout $CAP_S python3 benchmarks/liger/run_liger.py --device cuda --jobs 2 --json "$OUT/liger.json" \
  >/dev/null 2>/tmp/gv_liger.log &
LIG=$!
# the ReLU example, and a ReLU whose load has no mask (reads past its input: may still compare
# equal, since the stores are masked; memcheck's call)
sed 's/tl.load(x_ptr + offsets, mask=mask)/tl.load(x_ptr + offsets)/' examples/kernels/relu.py >/tmp/relu_oob.py
grep -q "tl.load(x_ptr + offsets)$" /tmp/relu_oob.py || echo "(the OOB variant did not apply: check examples/kernels/relu.py)" >>"$LOG"
timeout $CAP_S python3 -m agent verify examples/problems/relu.py examples/kernels/relu.py --device cuda \
  --trials 2 --sanitize --json 2>/tmp/gv_sanitize_ok.log | tail -1 >"$OUT/sanitize_ok.json" &
SOK=$!
timeout $CAP_S python3 -m agent verify examples/problems/relu.py /tmp/relu_oob.py --device cuda \
  --trials 2 --sanitize --json 2>/tmp/gv_sanitize_oob.log | tail -1 >"$OUT/sanitize_oob.json" &
SOOB=$!

# honest kernels that go through other launch paths under the lock-down: Inductor-style output
# (torch._inductor's runtime) and the two GEMM examples (tl.dot, ieee)
( for pair in relu:relu_inductor_style linear_gelu:linear_gelu matmul:matmul; do
    p=${pair%%:*}; k=${pair##*:}
    echo "== $k: $(timeout 40 python3 -m agent verify examples/problems/$p.py examples/kernels/$k.py \
      --device cuda --trials 2 --json 2>/dev/null | tail -1 | cut -c1-300)"
  done ) >/tmp/gv_honest.log 2>&1 &
HON=$!

wait $ADV; log "adversarial rc=$? (124: cut at $CAP_S s; the log has every case that finished)"
grep -v "^ok  " "$OUT/adversarial_cuda.log" | tail -40 >>"$LOG"
python3 - "$OUT/adversarial_cuda.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print({k: d[k] for k in ("kinds_tried", "kinds_skipped", "false_accepts", "harness_crashes", "wrong_status", "seconds")})
PY
wait $LIG; log "liger rc=$?"
cat /tmp/gv_liger.log >>"$LOG"
wait $SOK; log "sanitize (ReLU example) rc=$?"; cut -c1-400 "$OUT/sanitize_ok.json" >>"$LOG"
wait $SOOB; log "sanitize (ReLU without a load mask) rc=$?"; cut -c1-400 "$OUT/sanitize_oob.json" >>"$LOG"
tail -n 5 /tmp/gv_sanitize_ok.log /tmp/gv_sanitize_oob.log >>"$LOG" 2>&1
wait $HON; log "honest examples (other launch paths)"; cat /tmp/gv_honest.log >>"$LOG"
log "done"
