"""The compiler drafter and the tuner over the examples (issue: compiler drafter and tuner).

For each problem: draft with torch.compile's Triton (attempt 0), verify, time against eager and
torch.compile, then let the tuner try launch-parameter variants; report correctness, speedups
before/after tuning and how many tuner trials it took.

    python benchmarks/compiler_examples.py [--tune-trials 6] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import AgentConfig  # noqa: E402
from agent.runner import run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tune-trials", type=int, default=6)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--problems", nargs="*", default=None)
    args = ap.parse_args()
    problems = (
        [Path(p) for p in args.problems]
        if args.problems
        else sorted((ROOT / "examples/problems").glob("*.py"))
    )
    runs = tempfile.mkdtemp(prefix="compiler-examples-")
    rows = []
    for p in problems:
        cfg = AgentConfig(
            backend="compiler",
            budget=1,
            trials=args.trials,
            target_speedup=1e9,
            tune_trials=args.tune_trials,
            runs_dir=runs,
            timeout_s=300,
        )
        t0 = time.perf_counter()
        try:
            res = run(str(p), cfg)
        except Exception as exc:  # one problem failing must not stop the table
            rows.append({"problem": p.stem, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        atts = res["attempts"]
        seed = atts[0] if atts else {}
        tuned = [a for a in atts if str(a.get("source", "")).startswith("tuner:")]
        best = res.get("best") or {}
        rows.append(
            {
                "problem": p.stem,
                "compiler_status": seed.get("status"),
                "speedup_eager_before": (seed.get("speedups") or {}).get("eager"),
                "speedup_compile_before": (seed.get("speedups") or {}).get("compile"),
                "seed_speedups": seed.get("speedups"),
                "tuner": [
                    {"change": a["source"], "status": a["status"], "speedups": a.get("speedups")}
                    for a in tuned
                ],
                "best_source": best.get("source"),
                "best_speedups": best.get("speedups"),
                "tuner_trials": len(tuned),
                "tuner_correct": sum(1 for a in tuned if a["correct"]),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        # Written after every problem: a run stopped by its time limit keeps what it finished.
        print(json.dumps(rows[-1]), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=2))
    print(
        f"{'problem':16s} {'compiler':10s} {'x eager (seed)':>14s} {'x compile (seed)':>16s} "
        f"{'best x eager':>12s} {'best x compile':>14s} {'tuner':>8s}"
    )
    for r in rows:
        if "error" in r:
            print(f"{r['problem']:16s} ERROR {r['error']}")
            continue
        bs = r["best_speedups"] or {}
        fmt = lambda v: f"{v:.2f}" if isinstance(v, (int, float)) else "-"
        print(
            f"{r['problem']:16s} {str(r['compiler_status']):10s} {fmt(r['speedup_eager_before']):>14s} "
            f"{fmt(r['speedup_compile_before']):>16s} "
            f"{fmt(bs.get('eager')):>12s} {fmt(bs.get('compile')):>14s} {r['tuner_correct']}/{r['tuner_trials']:<6}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
