"""Merge `agent bench` output directories of one problem set: an older full run as the base,
newer (partial) runs over it, problem by problem, and the report rebuilt from the result.

    python benchmarks/merge_benches.py OUT BASE NEWER [NEWER ...] [--label BASE=s8 NEWER=s9]

OUT gets a copy of BASE (its bench.json, so the problem list and settings are the base's); then
each NEWER directory in the order given replaces every problem for which it has a verdict (a
`sample.json`); a problem it only started keeps the older verdict. `OUT/source.json` names, per
problem, the directory (or `--label`) its verdict came from. The report (`report.md`,
`report.json`) is rebuilt from the files (`agent.bench.report.rebuild_report`). OUT is built
beside it (`OUT.merging`) and takes its name only when complete; an OUT that is one of the
inputs, or inside one, is refused. The runs should
share their verification settings; this script does not compare them. Exit 2 when a directory
is not a bench output.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def finished(directory: Path) -> list[str]:
    """Problems with at least one evaluated candidate (a sample.json) in a bench directory."""
    return sorted({f.parent.parent.name for f in directory.glob("*/*/sample.json")})


def merge(out: Path, base: Path, newer: list[Path], labels: dict[str, str]) -> dict[str, str]:
    """Build OUT from BASE and NEWER (module docstring); returns problem -> source label."""
    for d in (base, *newer):
        if not (d / "bench.json").exists():
            raise SystemExit(f"{d} is not a bench output (no bench.json)")
        if out.resolve() == d.resolve() or d.resolve() in out.resolve().parents:
            raise SystemExit(f"{out} would overwrite its input {d}: choose another OUT")
    final, out = out, out.with_name(out.name + ".merging")  # OUT appears only when complete
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(base, out)
    label = {str(d): labels.get(str(d), str(d)) for d in (base, *newer)}
    source = {p: label[str(base)] for p in finished(base)}
    for d in newer:
        for problem in finished(d):
            shutil.rmtree(out / problem, ignore_errors=True)
            shutil.copytree(d / problem, out / problem)
            source[problem] = label[str(d)]
    (out / "source.json").write_text(json.dumps(dict(sorted(source.items())), indent=1) + "\n")
    from agent.bench.report import rebuild_report

    rebuild_report(out, elapsed_s=None, interrupted=False)
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    return source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("base", type=Path)
    ap.add_argument("newer", type=Path, nargs="+")
    ap.add_argument("--label", nargs="*", default=[], help="DIR=LABEL for source.json")
    args = ap.parse_args(argv)
    labels = dict(item.split("=", 1) for item in args.label)
    labels = {str(Path(k)): v for k, v in labels.items()}
    try:
        source = merge(args.out, args.base, args.newer, labels)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    counts: dict[str, int] = {}
    for v in source.values():
        counts[v] = counts.get(v, 0) + 1
    print(f"{args.out}: " + ", ".join(f"{n} from {k}" for k, n in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
