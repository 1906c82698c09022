"""What the verifier's issue-34 changes cost on the CPU examples: verify each example kernel
with two checkouts, alternating, and compare wall time, the candidate job's run loop and the
forward calls (Triton launches of a one-launch-a-call kernel).

    git worktree add /tmp/before <commit before the change>   (or `git archive | tar -x`)
    python benchmarks/unchecked_calls_cost.py --before /tmp/before [--reps 2] [--trials 5]

Each verification is `python -m agent verify P K --json --device cpu` in that checkout (problem
checks cached by the first round). Prints one line a verification and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("relu", "softmax", "layernorm", "matmul", "sum_reduction")


def verify(tree: Path, name: str, trials: int) -> dict:
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "verify",
            f"examples/problems/{name}.py",
            f"examples/kernels/{name}.py",
            "--json",
            "--device",
            "cpu",
            "--trials",
            str(trials),
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    v = json.loads(proc.stdout.strip().splitlines()[-1])
    ev = v.get("evidence") or {}
    return {
        "status": v.get("status"),
        "wall_s": wall,
        "runs_s": (ev.get("timings") or {}).get("runs"),
        "launches": (ev.get("audit") or {}).get("triton_launches"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="checkout before the change")
    ap.add_argument("--after", type=Path, default=ROOT, help="checkout with it (this one)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("examples", nargs="*", default=list(EXAMPLES))
    args = ap.parse_args(argv)
    rows: dict[tuple[str, str], list[dict]] = {}
    for name in args.examples:
        for _ in range(args.reps):
            for label, tree in (("before", args.before), ("after", args.after)):
                r = verify(tree, name, args.trials)
                rows.setdefault((name, label), []).append(r)
                print(f"{name:14s} {label:6s} {r}", flush=True)
    print("\n| example | calls before -> after | run loop s (median) | wall s (median) |")
    print("|---|---|---|---|")
    for name in args.examples:
        b, a = rows[(name, "before")], rows[(name, "after")]

        def med(rs: list[dict], key: str) -> float:
            return statistics.median(float(r[key] or 0) for r in rs)

        print(
            f"| {name} | {med(b, 'launches'):.1f} -> {med(a, 'launches'):.1f} | "
            f"{med(b, 'runs_s'):.2f} -> {med(a, 'runs_s'):.2f} | "
            f"{med(b, 'wall_s'):.1f} -> {med(a, 'wall_s'):.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
