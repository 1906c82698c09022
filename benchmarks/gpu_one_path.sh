#!/usr/bin/env bash
# Issue 37 (agent/ side), checked on one GPU in about 3 minutes: verify and profile through the
# one evaluation path (make_verifier; verify via tools.orchestrate.evaluate, profile via profile_candidate),
# the profile trace still written, and the switch pairs of the option table on a real run.
#
#   run(command="bash benchmarks/gpu_one_path.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=400)
#
# $OUT: verify.json, profile.json, trace.json, bench.json, optimize.json, pytest.txt, log.txt,
# check.txt (PASS/FAIL lines).
set -u
source "$(dirname "$0")/_gpu_env.sh"
log="$OUT/log.txt"; : > "$log"
timeout 60 python -m agent verify examples/problems/relu.py examples/kernels/relu.py --json \
  > "$OUT/verify.out" 2>> "$log"; echo "verify exit $?" >> "$log"
tail -n 1 "$OUT/verify.out" > "$OUT/verify.json"
timeout 90 python -m agent profile examples/problems/softmax.py examples/kernels/softmax.py \
  --baseline eager --trace "$OUT/trace.json" --json > "$OUT/profile.out" 2>> "$log"
echo "profile exit $?" >> "$log"
tail -n 1 "$OUT/profile.out" > "$OUT/profile.json"
mkdir -p /tmp/op && cp examples/problems/{relu,softmax}.py /tmp/op/
timeout 120 python -m agent bench /tmp/op --backend compiler --mode loop --samples 1 \
  --no-tune --out /tmp/op-out --json > "$OUT/bench.out" 2>> "$log"
tail -n 1 "$OUT/bench.out" > "$OUT/bench.json"
timeout 90 python -m agent optimize examples/problems/relu.py --compiler-seed --no-tune \
  --runs-dir /tmp/op-runs --json > "$OUT/optimize.out" 2>> "$log"
tail -n 1 "$OUT/optimize.out" > "$OUT/optimize.json"
timeout 120 python -m pytest -q -p no:cacheprovider tests/test_one_evaluation_path.py \
  tests/test_options_table.py > "$OUT/pytest.txt" 2>&1
python - "$OUT" > "$OUT/check.txt" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as exc:
        return {"error": str(exc)}
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
v, p, b, o = (load(n) for n in ("verify.json", "profile.json", "bench.json", "optimize.json"))
check(v.get("status") == "ok" and v.get("device") == "cuda", f"verify relu ok on cuda: {v.get('status')}")
check(p.get("status") in ("ok", "slower") and p.get("baseline") == "eager",
      f"profile softmax timed against eager: {p.get('status')}")
check(os.path.getsize(os.path.join(out, "trace.json")) > 0 if os.path.exists(os.path.join(out, "trace.json")) else False,
      "profile --trace written")
check(b.get("status") == "ok" and "metrics" in b, f"bench loop mode ran: {b.get('status')}")
check(o.get("correct") is True and (o.get("attempts") or [{}])[0].get("source") == "compiler",
      "optimize --compiler-seed: attempt 0 is the compiler's, correct")
check(" passed" in open(os.path.join(out, "pytest.txt")).read(), "CPU tests of issue 37 pass on the GPU host")
PY
cat "$OUT/check.txt"
