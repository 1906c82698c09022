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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.bench.headline import headline, markdown, problem_level  # noqa: E402
from agent.bench.metrics import code_versions, one_code_version  # noqa: E402
from agent.bench.report import compute_report  # noqa: E402
from agent.bench.store import load_results  # noqa: E402


def rows_of(
    bench_dirs: list[str], problem_rows: dict[str, dict] | None = None
) -> dict[str, tuple[str | None, dict]]:
    """(level, best speedup per baseline) per problem, keyed by level/name; with
    `problem_rows`, also each problem's report row under the same key."""
    rows: dict[str, tuple[str | None, dict]] = {}
    for d in bench_dirs:
        settings, problems = load_results(d)
        report = compute_report(settings, problems)
        for r in report["problems"]:
            level = problem_level(r["problem"], settings.get("problems_path"))
            rows[f"{level}/{r['problem']}"] = (level, r["best_speedup"])
            if problem_rows is not None:
                problem_rows[f"{level}/{r['problem']}"] = r
    return rows


def versions_line(versions: dict[str, int]) -> str:
    """Which versions of this project's code made the verdicts counted (issue 35: a headline
    from one run of one version), from `code_versions`' count."""
    one = one_code_version(versions)
    if one:
        return f"All {versions[one]} candidates judged by one version of the code: {one}."
    return (
        f"Candidates judged by {len(versions)} version(s) of the code: "
        + ", ".join(f"{v} ({n})" for v, n in versions.items())
        + " (unknown: written before records kept it); not a headline from one version."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_dirs", nargs="+")
    ap.add_argument("--json", dest="json_out", help="also write the headline object here")
    args = ap.parse_args(argv)
    problem_rows: dict[str, dict] = {}
    h = headline(rows_of(args.bench_dirs, problem_rows).values())
    versions = code_versions(list(problem_rows.values()))
    h["code_versions"] = versions
    print("\n".join(markdown(h)) or "no timed correct kernel in these benches")
    print("\n" + versions_line(versions))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(h, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
