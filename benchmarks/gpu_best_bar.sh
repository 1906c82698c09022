#!/usr/bin/env bash
# The bar is the better of eager and torch.compile (issue 15 item 4), checked on one GPU in
# under 2 minutes: `profile` of the example kernels reports speedup_eager, speedup_compile and
# speedup_best (= the lower of the two) and decides ok/slower on best; `bench --backend
# compiler` over three examples reports fast_p_best and the geomean over best; `optimize` of
# relu (compiler seed, no model) reports each attempt's speedups {eager, compile, best}.
#
#   run(command="bash benchmarks/gpu_best_bar.sh", carry=[".whl"], kind="nvidia-h200", timeout_s=300)
#
# $OUT: profile_<name>.json, bench.json, optimize.json, log.txt, check.txt (PASS/FAIL lines).
set -u
source "$(dirname "$0")/_gpu_env.sh"
log="$OUT/log.txt"; : > "$log"
for name in relu softmax matmul; do
  timeout 60 python -m agent profile "examples/problems/$name.py" "examples/kernels/$name.py" \
    --json > "$OUT/profile_$name.out" 2>> "$log"
  tail -n 1 "$OUT/profile_$name.out" > "$OUT/profile_$name.json"
done
mkdir -p /tmp/bb && cp examples/problems/{relu,softmax,sum_reduction}.py /tmp/bb/
timeout 120 python -m agent bench /tmp/bb --backend compiler --out /tmp/bb-out --json \
  > "$OUT/bench.out" 2>> "$log"
tail -n 1 "$OUT/bench.out" > "$OUT/bench.json"
timeout 90 python -m agent optimize examples/problems/relu.py --runs-dir /tmp/bb-runs --json \
  > "$OUT/optimize.out" 2>> "$log"
tail -n 1 "$OUT/optimize.out" > "$OUT/optimize.json"
python - "$OUT" > "$OUT/check.txt" 2>&1 <<'PY'
import json, sys
out = sys.argv[1]
def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
for name in ("relu", "softmax", "matmul"):
    try:
        p = json.load(open(f"{out}/profile_{name}.json"))
    except Exception as e:
        check(False, f"profile {name}: {e}"); continue
    e, c, b = (p.get(k) or {} for k in ("speedup_eager", "speedup_compile", "speedup_best"))
    check(p.get("baseline") == "best", f"profile {name}: baseline {p.get('baseline')}")
    if e and c:
        check(b.get("value") == min(e["value"], c["value"]),
              f"profile {name}: best {b.get('value')} = min(eager {e['value']}, compile {c['value']}); status {p.get('status')}")
try:
    m = json.load(open(f"{out}/bench.json"))["metrics"]
    check("fast_p_best" in m and "best" in m["geomean_speedup"],
          f"bench: fast_p_best {m.get('fast_p_best')}, geomean {m.get('geomean_speedup')}")
except Exception as e:
    check(False, f"bench: {e}")
try:
    r = json.load(open(f"{out}/optimize.json"))
    sp = [a.get("speedups") for a in r["attempts"]]
    check(r.get("baseline") == "best" and any(s and "best" in s for s in sp), f"optimize: {sp}")
except Exception as e:
    check(False, f"optimize: {e}")
PY
rm -f "$OUT"/*.out
cat "$OUT/check.txt"
