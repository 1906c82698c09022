"""Harness overhead per candidate with a warm worker pool.

Overhead = wall time of `Verifier.verify` minus what the kernel itself costs inside its job
(running the trials, and on CPU the ahead-of-time compile). What remains is the harness: static
checks, forking a fresh job process from the warm forkserver, shipping inputs and outputs, loading
the candidate module, building ModelNew, the audit, and the comparison in the agent process.
Goal (issue: evaluation tools): under 0.2 s on a 2-core machine.

    python benchmarks/harness_overhead.py [--n 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.core.problem import read_problem  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--problem", default=str(ROOT / "examples/problems/relu.py"))
    ap.add_argument("--kernel", default=str(ROOT / "examples/kernels/relu.py"))
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = read_problem(args.problem)
    source = Path(args.kernel).read_text()
    v = Verifier(
        VerifyOptions(
            trials=args.trials, aot_target="sm_90" if not os.environ.get("NO_AOT") else None
        )
    )
    v.verify(problem, source, "warmup.py")  # starts the forkserver, caches the reference
    rows = []
    for i in range(args.n):
        t0 = time.perf_counter()
        verdict = v.verify(problem, source, f"candidate_{i}.py")
        total = time.perf_counter() - t0
        t = verdict.evidence.timings
        own = t.get("runs", 0.0) + t.get("aot", 0.0)
        rows.append(
            {"total_s": total, "kernel_s": own, "overhead_s": total - own, "status": verdict.status}
        )
        assert verdict.status == "ok", verdict.feedback()
    over = [r["overhead_s"] for r in rows]
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "device": v.device,
        "n": args.n,
        "trials": args.trials,
        "overhead_median_s": statistics.median(over),
        "overhead_p90_s": sorted(over)[int(0.9 * (len(over) - 1))],
        "total_median_s": statistics.median(r["total_s"] for r in rows),
        "kernel_median_s": statistics.median(r["kernel_s"] for r in rows),
        "goal_s": 0.2,
    }
    summary["meets_goal"] = summary["overhead_median_s"] < summary["goal_s"]
    print(
        f"harness overhead per candidate ({summary['device']}, {args.n} candidates, warm pool): "
        f"median {summary['overhead_median_s'] * 1000:.0f} ms, p90 {summary['overhead_p90_s'] * 1000:.0f} ms "
        f"(total {summary['total_median_s']:.2f} s of which the kernel's own trials+compile "
        f"{summary['kernel_median_s']:.2f} s); goal < 200 ms: {'met' if summary['meets_goal'] else 'NOT met'}"
    )
    if args.json:
        print(json.dumps(summary))
    return 0 if summary["meets_goal"] else 1


if __name__ == "__main__":
    sys.exit(main())
