"""Verify every example kernel (good and broken) on a device; print a table, write JSON.

    python benchmarks/verify_examples.py [--device auto|cpu|cuda] [--out FILE.json]

Uses only `tools/` (runs on a GPU box without the agent's dependencies).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _examples import example_kernels, expected_status, problem_for  # noqa: E402

from tools.core.problem import read_problem  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="auto")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--out", default=None)
    ap.add_argument("--jobs-per-gpu", type=int, default=1)
    args = ap.parse_args()
    files = example_kernels()
    # Verification needs no exclusive GPU (timing does): --jobs-per-gpu jobs at once per GPU.
    v = Verifier(
        VerifyOptions(
            trials=args.trials,
            timeout_s=args.timeout,
            device=args.device,
            jobs_per_gpu=args.jobs_per_gpu,
        )
    )

    def one(k: Path):
        expected = expected_status(k)
        t0 = time.perf_counter()
        verdict = v.verify(read_problem(problem_for(k)), k.read_text(), str(k))
        return {
            "kernel": str(k.relative_to(ROOT)),
            "expected": expected,
            "status": verdict.status,
            "as_expected": verdict.status == expected,
            "seconds": round(time.perf_counter() - t0, 2),
            "message": verdict.message[:200],
        }

    t0 = time.perf_counter()
    print(f"{'kernel':48s} {'expected':15s} {'status':15s} ok?  s", flush=True)
    rows = []
    with cf.ThreadPoolExecutor(max_workers=v.sandbox.slots) as pool:
        for fut in cf.as_completed([pool.submit(one, f) for f in files]):
            r = fut.result()
            rows.append(r)
            print(
                f"{r['kernel']:48s} {r['expected']:15s} {r['status']:15s} "
                f"{'yes' if r['as_expected'] else 'NO ':4s} {r['seconds']}",
                flush=True,
            )
    total = time.perf_counter() - t0
    good = sum(r["as_expected"] for r in rows)
    print(f"device {v.device}: {good}/{len(rows)} verdicts as expected in {total:.1f} s")
    if args.out:
        Path(args.out).write_text(
            json.dumps({"device": v.device, "rows": rows, "seconds": total}, indent=2)
        )
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
