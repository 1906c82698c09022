"""What verification costs now against an earlier checkout (issue 34: "the cost of verification
against today's"), on a GPU: the example kernels and KernelBench problems at their published
sizes, each verified by both checkouts *at the same time* (one `agent verify` process each, so
both see the same load), one pair after another.

    python benchmarks/gpu_verify_cost.py --before DIR --after DIR [--kb DIR] [--trials 5]
        [--out FILE.json]

`--kb DIR` holds `<problem>.py` and `<problem>__kernel.py` pairs (KernelBench problems and a
candidate for each); without it, only the examples. Prints one line a pair and the medians;
writes JSON (every run: wall seconds, status, the candidate job's own timings).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("relu", "softmax", "layernorm", "matmul", "linear_gelu", "sum_reduction")


def verify(
    tree: Path, problem: Path, kernel: Path, trials: int, timeout: float, device: str
) -> dict:
    t0 = time.monotonic()
    caches = f"/tmp/cost-cache-{tree.name}"  # each checkout its own (formats may differ)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "agent", "verify", str(problem), str(kernel), "--json",
             "--device", device, "--trials", str(trials)],
            cwd=tree, capture_output=True, text=True, check=False, timeout=timeout,
            env={
                **os.environ,
                "PYTHONPATH": f"{tree}:{os.environ.get('PYTHONPATH', '')}",
                "TRITON_AGENT_CACHE": f"{caches}/agent",
                "TRITON_CACHE_DIR": f"{caches}/triton",
            },
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"wall_s": round(time.monotonic() - t0, 2), "status": "harness_timeout"}
    wall = time.monotonic() - t0
    try:
        v = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"wall_s": round(wall, 2), "status": "no_json", "stderr": proc.stderr[-600:]}
    ev = v.get("evidence") or {}
    return {
        "wall_s": round(wall, 2),
        "status": v.get("status"),
        "message": (v.get("message") or "")[:200],
        "job": ev.get("timings"),
        "launches": (ev.get("audit") or {}).get("triton_launches"),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--after", required=True, type=Path)
    ap.add_argument("--kb", type=Path)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default="", help="comma-separated items (examples, KB problems)")
    args = ap.parse_args()
    before, after = args.before.resolve(), args.after.resolve()
    items = [
        (
            name,
            (ROOT / "examples/problems" / f"{name}.py"),
            ROOT / "examples/kernels" / f"{name}.py",
        )
        for name in EXAMPLES
    ]
    if args.kb:
        for k in sorted(args.kb.resolve().glob("*__kernel.py")):
            name = k.name[: -len("__kernel.py")]
            items.append((name, k.with_name(f"{name}.py"), k))
    if args.only:
        items = [i for i in items if i[0] in args.only.split(",")]
    rows = []
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for name, problem, kernel in items:
            fb = pool.submit(
                verify, before, problem, kernel, args.trials, args.timeout, args.device
            )
            fa = pool.submit(verify, after, problem, kernel, args.trials, args.timeout, args.device)
            b, a = fb.result(), fa.result()
            ratio = a["wall_s"] / b["wall_s"] if b["wall_s"] else None
            rows.append({"item": name, "before": b, "after": a, "ratio": ratio})
            if args.out:  # after each pair: a run cut short keeps what it measured
                args.out.write_text(json.dumps({"rows": rows}, indent=1))
            print(
                f"{name:50s} before {b['wall_s']:6.1f}s {b['status']!s:10s} "
                f"after {a['wall_s']:6.1f}s {a['status']!s:10s} x{ratio:.2f}",
                flush=True,
            )
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    summary = {
        "items": len(rows),
        "median_ratio": statistics.median(ratios) if ratios else None,
        "before_total_s": round(sum(r["before"]["wall_s"] for r in rows), 1),
        "after_total_s": round(sum(r["after"]["wall_s"] for r in rows), 1),
        "trials": args.trials,
        "device": args.device,
        "method": "each pair run at once, one process per checkout, one pair after another",
    }
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
