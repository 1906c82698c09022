"""The headline (issue 35) over one or more bench output dirs, e.g. one per KernelBench level:
the geometric mean of each problem's best correct speedup, the median, the trimmed and the
capped geometric mean and the count at >= 1.0x, over the bar (the better of eager and
torch.compile), over eager with cudnn.benchmark and over each baseline; for all the problems
and per level (`agent.bench.headline`). Reads the files only (`agent.bench.store.load_results`).

    python benchmarks/headline.py BENCH_DIR [BENCH_DIR ...] [--json OUT.json]

Prints the markdown table (and the definition); `--json` writes the headline object too. A
problem named in two dirs counts once, from the last dir that names it (a re-measured run
given after the run it replaces).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.bench.headline import headline, markdown, problem_level  # noqa: E402
from agent.bench.report import compute_report  # noqa: E402
from agent.bench.store import load_results  # noqa: E402


def rows_of(
    bench_dirs: list[str], versions: dict[str, list[str]] | None = None
) -> dict[str, tuple[str | None, dict]]:
    """(level, best speedup per baseline) per problem, keyed by level/name; with `versions`,
    also each problem's candidates' code versions (`SampleRecord.code`) under the same key."""
    rows: dict[str, tuple[str | None, dict]] = {}
    for d in bench_dirs:
        settings, problems = load_results(d)
        report = compute_report(settings, problems)
        for r in report["problems"]:
            level = problem_level(r["problem"], settings.get("problems_path"))
            rows[f"{level}/{r['problem']}"] = (level, r["best_speedup"])
            if versions is not None:
                versions[f"{level}/{r['problem']}"] = [
                    s.get("code") or "unknown" for s in r["samples"]
                ]
    return rows


def versions_line(versions: dict[str, list[str]]) -> str:
    """Which versions of this project's code made the verdicts counted (issue 35: a headline
    from one run of one version)."""
    count = Counter(v for vs in versions.values() for v in vs)
    if len(count) == 1 and "unknown" not in count:
        return f"All {sum(count.values())} candidates judged by one version of the code: {next(iter(count))}."
    return (
        f"Candidates judged by {len(count)} version(s) of the code: "
        + ", ".join(f"{v} ({n})" for v, n in count.most_common())
        + " (unknown: written before records kept it); not a headline from one version."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_dirs", nargs="+")
    ap.add_argument("--json", dest="json_out", help="also write the headline object here")
    args = ap.parse_args(argv)
    versions: dict[str, list[str]] = {}
    h = headline(rows_of(args.bench_dirs, versions).values())
    h["code_versions"] = dict(Counter(v for vs in versions.values() for v in vs))
    print("\n".join(markdown(h)) or "no timed correct kernel in these benches")
    print("\n" + versions_line(versions))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(h, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
