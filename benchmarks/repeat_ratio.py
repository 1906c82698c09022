"""How much faster is the reference itself (eager PyTorch) on repeated input values than on new
ones, on this GPU? The timing job's repeat check (`tools.checks.timing.time_repeats`) judges a
candidate's repeated/fresh ratio against the reference's (`tools.checks.timing.reference_repeats`),
since session 17 refused an honest fp16 Triton convolution (KernelBench level1/50) at 0.79x on
the H200. This times eager on each problem at each precision the way the timing job does
(`tools.checks.timing.Timer`, L2 flush before every call, new values written before every fresh call),
`--rounds` times, and prints one JSON row per problem and precision: the ratios of each round,
and `repeat_finding`'s verdict on eager's last round judged against its first round, and
with no reference (the rule before).

    python benchmarks/repeat_ratio.py --kernelbench .kb/kb --level 1 --problems 50,1 \\
        --precisions fp16,bf16,fp32 --rounds 3 --out repeat_ratio.json

Needs a CUDA device (`--dry-run` only resolves the problems: the CPU check).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def problem_files(root: Path, level: int, ids: list[int]) -> list[Path]:
    """KernelBench's problem files `<id>_*.py` of `level` under `root`."""
    found = []
    for i in ids:
        hits = sorted((root / f"level{level}").glob(f"{i}_*.py"))
        if not hits:
            raise SystemExit(f"no problem {i} in {root / f'level{level}'}")
        found.append(hits[0])
    return found


def measure(path: Path, precision: str, rounds: int, device: str = "cuda") -> dict:
    """Eager on the problem at `precision`, timed both ways `rounds` times."""
    import torch

    from tools.checks.freshness import fresh_moments, refresher
    from tools.checks.timing import Freshness, Timer, reference_repeats, repeat_finding
    from tools.job.job_common import build_model, load_problem, make_inputs

    mod = load_problem(path.read_text(), str(path), precision)
    model, _ = build_model(mod, 42, device)
    base = make_inputs(mod, 1042, device)
    refresh = refresher(fresh_moments(base))
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    timer = Timer(l2, warmup_ms=25.0, rep_ms=100.0, min_reps=10, max_reps=200)

    def eager(args: list):
        with torch.no_grad():
            return model(*args)

    timer.fresh = Freshness(refresh=refresh)
    fresh_ms = statistics.median(timer.measure(eager, [base]))  # warm-up, as the baselines
    refs = [reference_repeats(timer, eager, base, refresh) for _ in range(rounds)]
    last = refs[-1]
    fresh, repeated = [last["fresh_ms"]] * 3, [last["repeated_ms"]] * 3
    return {
        "problem": path.stem,
        "precision": precision,
        "eager_fresh_ms": round(fresh_ms, 6),
        "rounds": refs,
        "ratios": [r["ratio"] for r in refs],
        "last_round_vs_first_ok": repeat_finding(fresh, repeated, refs[0])["ok"],
        "eager_without_reference_ok": repeat_finding(fresh, repeated)["ok"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", type=Path, required=True)
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--problems", default="50,1")
    ap.add_argument("--precisions", default="fp16,bf16,fp32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    files = problem_files(a.kernelbench, a.level, [int(x) for x in a.problems.split(",")])
    precisions = a.precisions.split(",")
    if a.dry_run:
        print(json.dumps({"problems": [f.stem for f in files], "precisions": precisions}))
        return 0
    rows = []
    for f in files:
        for p in precisions:
            t0 = time.perf_counter()
            try:
                row = measure(f, p, a.rounds)
            except Exception as exc:  # noqa: BLE001 - one problem's failure is a row
                row = {"problem": f.stem, "precision": p, "error": f"{type(exc).__name__}: {exc}"}
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
