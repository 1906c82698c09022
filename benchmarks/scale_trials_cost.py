"""What the scale trials cost (issue 35): every example kernel verified without them
(`input_scales=()`, the default before) and with the default (`SCALE_TRIALS`), one verification
at a time, the two alternating so that drift in the machine's load falls on both; wall time of
each, statuses (both must be the same: ok for the good kernels).

    python benchmarks/scale_trials_cost.py [--device cpu] [--trials 5] [--repeats 1] [--out FILE.md]

Writes a small markdown table (default benchmarks/results/scale_trials_cost_<device>.md). Uses
only `tools/`.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _examples import problem_for  # noqa: E402

from tools.core.problem import read_problem  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402
from tools.orchestrate.verify_options import SCALE_TRIALS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    base = {"trials": args.trials, "timeout_s": args.timeout, "device": args.device}
    without = Verifier(VerifyOptions(**base, input_scales=()))
    with_ = Verifier(VerifyOptions(**base), sandbox=without.sandbox)
    modes = {"without": without, "with": with_}
    kernels = sorted((ROOT / "examples" / "kernels").glob("*.py"))
    rows = []
    for i, k in enumerate(kernels):
        problem = read_problem(problem_for(k))
        source = k.read_text()
        without.reference(problem)  # the problem's check (cached) outside the timings
        times: dict[str, list[float]] = {"without": [], "with": []}
        status: dict[str, str] = {}
        for r in range(args.repeats):
            order = ["without", "with"] if (i + r) % 2 == 0 else ["with", "without"]
            for mode in order:
                t0 = time.perf_counter()
                v = modes[mode].verify(problem, source, str(k))
                times[mode].append(time.perf_counter() - t0)
                status[mode] = v.status
        row = {
            "kernel": k.stem,
            "without": statistics.median(times["without"]),
            "with": statistics.median(times["with"]),
            "status": f"{status['without']} / {status['with']}",
        }
        rows.append(row)
        print(
            f"{row['kernel']:24s} {row['without']:7.2f} s {row['with']:7.2f} s  {row['status']}",
            flush=True,
        )
    total = {m: sum(r[m] for r in rows) for m in ("without", "with")}
    lines = [
        "# Scale trials: verification wall time without and with them (issue 35)",
        "",
        f"`python benchmarks/scale_trials_cost.py --device {args.device} --trials {args.trials} "
        f"--repeats {args.repeats}` on {platform.node() or 'this machine'} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). Each example kernel "
        f"verified with `input_scales=()` (before) and with the default `SCALE_TRIALS` = "
        f"{SCALE_TRIALS} ({args.trials} trials either way, plus the unannounced ones), one "
        "verification at a time, alternating; the problem's check is cached beforehand. "
        f"Median of {args.repeats} run(s) a cell, seconds.",
        "",
        "| kernel | without | with | ratio | status (without / with) |",
        "|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kernel']} | {r['without']:.2f} | {r['with']:.2f} | "
            f"{r['with'] / r['without']:.2f} | {r['status']} |"
        )
    lines.append(
        f"| **total** | {total['without']:.2f} | {total['with']:.2f} | "
        f"{total['with'] / total['without']:.2f} | |"
    )
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"scale_trials_cost_{args.device}.md")
    out.write_text("\n".join(lines) + "\n")
    print(f"total {total['without']:.1f} s -> {total['with']:.1f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
