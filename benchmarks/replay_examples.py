"""A replay script for `agent bench --backend replay` made from the example kernels.

For each problem of examples/problems (in the order bench visits them), N replies: the
problem's good kernel(s) and broken kernels of examples/kernels and examples/broken, in turn,
each wrapped as a model reply. It stands in for a model on machines without weights, so a
bench run exercises pass@k, fast_p, statuses and timing over a realistic mix of right and wrong
candidates.

    python benchmarks/replay_examples.py --samples 4 --out /tmp/replies.jsonl
    python -m agent bench examples/problems --backend replay --replies /tmp/replies.jsonl --samples 4
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _examples import EX, example_kernels, problem_for


def replies(samples: int, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for prob in sorted((EX / "problems").glob("*.py")):
        good = [f for f in example_kernels(("kernels",)) if problem_for(f).stem == prob.stem]
        bad = [
            f
            for f in example_kernels(("broken",))
            if problem_for(f).stem == prob.stem and not any(f.stem.endswith("__" + s) for s in skip)
        ]
        pool = [*good, *bad] or good
        for i in range(samples):
            code = pool[i % len(pool)].read_text()
            out.append(f"Here is the optimized kernel.\n\n```python\n{code}```\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--out", required=True)
    ap.add_argument(
        "--skip", default="", help="comma-separated broken kinds to leave out, e.g. timeout"
    )
    args = ap.parse_args()
    skip = tuple(s for s in args.skip.split(",") if s)
    texts = replies(args.samples, skip)
    Path(args.out).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    print(f"{len(texts)} replies -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
