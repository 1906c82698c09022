"""Per-class figures of KernelBench bench directories (what `kernelbench_summary.py` gives per
level), and what the draft-time convolution choice (tools/draft/conv_picks.py) did, from the
directories' files alone:

    python benchmarks/kernelbench_classes.py bench/level1 bench/level2 [--before OLD1 OLD2]

Classes by problem name: convolution ("conv"), GEMM/attention ("gemm", "matmul", "matrix",
"bmm", "attention"), other. Per level and class: problems, correct, geomean speedup over the
better of eager and torch.compile, over eager, over compile, how many are at least 0.97x of
the better, and over eager at full fp32 where it was timed. With `--before`, the same problems'
geomean in the older directories (same order of levels) and the ratio. Then the conv picks: per
level, how many convolution calls took X_SPLIT (bf16x3 on operands split in memory), bf16x3,
X_LAST, both, or kept the call as written, and how many bf16x3 kernels the accuracy check
refused. Exit 2 when a directory is not a bench
output or `--before` does not give one directory for each.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

GEMM_WORDS = ("gemm", "matmul", "matrix", "bmm", "attention")


def klass(name: str) -> str:
    low = name.lower()
    if "conv" in low:
        return "convolution"
    if any(w in low for w in GEMM_WORDS):
        return "GEMM / attention"
    return "other"


def samples(directory: str) -> dict[str, dict]:
    """problem -> its first candidate's sample.json (those with a verdict)."""
    out = {}
    for f in sorted(Path(directory).glob("*/00/sample.json")):
        s = json.loads(f.read_text())
        if s.get("speedups") or s.get("status") not in (None, "incomplete"):
            out[s["problem"]] = s
    return out


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def class_rows(level: str, now: dict[str, dict], before: dict[str, dict] | None) -> list[str]:
    rows = []
    for k in ("GEMM / attention", "convolution", "other"):
        names = [p for p in now if klass(p) == k]
        if not names:
            continue
        sp = [now[p].get("speedups") or {} for p in names]
        best = [s.get("best") for s in sp]
        row = [
            level, k, str(len(names)), str(sum(bool(now[p].get("correct")) for p in names)),
            fmt(geomean(best)), fmt(geomean([s.get("eager") for s in sp])),
            fmt(geomean([s.get("compile") for s in sp])),
            str(sum(1 for b in best if b and b >= 0.97)),
            fmt(geomean([s.get("eager_fp32") for s in sp])),
        ]  # fmt: skip
        if before is not None:
            old = geomean([(before.get(p, {}).get("speedups") or {}).get("best") for p in names])
            new = geomean(best)
            row += [fmt(old), fmt(new / old) if old and new else "-"]
        rows.append("| " + " | ".join(row) + " |")
    return rows


PICKED = re.compile(r"conv#\d+ \([^)]*\): (.*?) picked on the GPU")


def conv_picks(directory: str) -> dict[str, int]:
    counts = {"X_SPLIT": 0, "bf16x3": 0, "X_LAST": 0, "bf16x3 and X_LAST": 0, "kept": 0}
    counts.update({"exact X_SPLIT": 0, "DIRECT_2D": 0, "AS_GEMM": 0, "PART_SUM": 0})
    counts["refused bf16x3"] = 0
    for f in sorted(Path(directory).glob("*/00/response.txt")):
        for line in f.read_text().splitlines():
            if not line.startswith("conv#"):
                continue
            m = PICKED.match(line)
            if m and "X_SPLIT" in m.group(1) and "'ieee'" in m.group(1):
                counts["exact X_SPLIT"] += 1
            elif m and "PART_SUM" in m.group(1):
                counts["PART_SUM"] += 1
            elif m and "X_SPLIT" in m.group(1):
                counts["X_SPLIT"] += 1
            elif m and ("DIRECT_2D" in m.group(1) or "AS_GEMM" in m.group(1)):
                counts["DIRECT_2D" if "DIRECT_2D" in m.group(1) else "AS_GEMM"] += 1
            elif m:
                both = "bf16x3" in m.group(1) and "X_LAST" in m.group(1)
                key = (
                    "bf16x3 and X_LAST"
                    if both
                    else ("bf16x3" if "bf16x3" in m.group(1) else "X_LAST")
                )
                counts[key] += 1
            elif "kept as written" in line or "nothing to choose" in line:
                counts["kept"] += 1
            refused = r"bf16x3(?: X_SPLIT)?(?: PART_SUM)? max error against fp64 [^;]*?: (?:over|elements past)"
            counts["refused bf16x3"] += len(re.findall(refused, line))
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--before", nargs="*", default=None)
    args = ap.parse_args(argv)
    for d in [*args.dirs, *(args.before or [])]:
        if not (Path(d) / "bench.json").exists():
            print(f"{d} is not a bench output (no bench.json)", file=sys.stderr)
            return 2
    if args.before is not None and len(args.before) != len(args.dirs):
        print("--before takes one directory for each directory", file=sys.stderr)
        return 2
    head = "| level | class | problems | correct | vs better | vs eager | vs compile | >= 0.97x of better | vs eager fp32 |"
    sep = "|---" * 9 + "|"
    if args.before is not None:
        head += " before: vs better | change |"
        sep += "---|---|"
    print(head)
    print(sep)
    for i, d in enumerate(args.dirs):
        before = samples(args.before[i]) if args.before else None
        for row in class_rows(Path(d).name, samples(d), before):
            print(row)
    print()
    print(
        "| level | convolution calls: X_SPLIT | bf16x3 | X_LAST | both | kept as written "
        "| bf16x3 kernels refused (accuracy) | exact X_SPLIT | DIRECT_2D | AS_GEMM | X_SPLIT PART_SUM |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in args.dirs:
        c = conv_picks(d)
        print(
            f"| {Path(d).name} | {c['X_SPLIT']} | {c['bf16x3']} | {c['X_LAST']} | {c['bf16x3 and X_LAST']} | "
            f"{c['kept']} | {c['refused bf16x3']} | {c['exact X_SPLIT']} | {c['DIRECT_2D']} | "
            f"{c['AS_GEMM']} | {c['PART_SUM']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
