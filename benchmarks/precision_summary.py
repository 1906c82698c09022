"""Each sample of an `agent bench` output directory, one line: problem, status, the precision
its verdict names, and its speedups over eager and torch.compile (both timed at that precision
by the timing job). Reads the sample records as they are written (`*/*/sample.json`, with
`verdict.json` beside), so a bench cut short by its time limit still shows what finished.
Used by benchmarks/gpu_precision_check.sh (issue 36).

    python benchmarks/precision_summary.py BENCH_OUT [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def rows(out: Path) -> list[dict]:
    found = []
    for sample in sorted(out.glob("*/*/sample.json")):
        rec = json.loads(sample.read_text())
        verdict_path = sample.parent / "verdict.json"
        verdict = json.loads(verdict_path.read_text()) if verdict_path.is_file() else {}
        sp = rec.get("speedups") or {}
        found.append({
            "problem": rec.get("problem"), "status": rec.get("status"),
            "precision": verdict.get("precision", "?"),
            "atol": verdict.get("atol"), "arithmetic": verdict.get("arithmetic"),
            "vs_eager": sp.get("eager"), "vs_compile": sp.get("compile"),
            "message": str(verdict.get("message", ""))[:160],
        })  # fmt: skip
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    found = rows(Path(a.out))
    for r in found:
        sp = " ".join(
            f"{k} {r[k]:.2f}x" if isinstance(r[k], (int, float)) else f"{k} -"
            for k in ("vs_eager", "vs_compile")
        )
        print(f"{r['problem']}: {r['status']} at {r['precision']} (atol {r['atol']}); {sp}; "
              f"arithmetic {r['arithmetic']}; {r['message']}")  # fmt: skip
    if not found:
        print(f"no finished sample under {a.out}")
    if a.json:
        Path(a.json).write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
