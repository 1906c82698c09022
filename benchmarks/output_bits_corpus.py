"""The corpus kinds the low-mantissa-bit check (issue 35, `tools/checks/output_bits.py`) can move: every
kind expected `ok` (none may become `mismatch`), the cancelling sums (the 15-bit one must be
`mismatch`) and the bf16/fp16/15-bit kinds. Prints one line a case and a summary.

    python benchmarks/output_bits_corpus.py --device cpu [--trials 3] [--workers N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.adversarial_figures import load_corpus, run_corpus  # noqa: E402


def _selected(device: str) -> list:
    cases = [c for c in load_corpus() if device != "cpu" or not c.requires_cuda]
    words = ("bf16", "fp16", "15_bits")
    return [
        c
        for c in cases
        if "ok" in c.expected or c.name.startswith("cancel_sum") or any(w in c.kind for w in words)
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    cases = _selected(args.device)
    t0 = time.time()
    results, dev = run_corpus(
        cases, device=args.device, timeout_s=120, trials=args.trials, workers=args.workers
    )
    expected = {c.name: c.expected for c in cases}
    bad = 0
    for o in sorted(results, key=lambda o: o.name):
        exp = expected[o.name]
        good = o.status in exp
        bad += not good
        words = "as expected" if good else "NOT AS EXPECTED"
        print(f"| {o.name} | {'/'.join(exp)} | {o.status} | {words} | {o.message[:140]!r} |")
    print(
        f"{len(results)} cases, {len(results) - bad} as expected, {time.time() - t0:.0f} s on {dev}"
    )


if __name__ == "__main__":
    main()
