"""Issues 33, 35 and 36, "done when", checked against bench output: one table that says, per
criterion, its target, what the runs measured and PASS, FAIL or NOT MEASURED.

    python benchmarks/acceptance.py [--fp32 DIR ...] [--level3 DIR] [--bf16 DIR ...]
        [--fp16 DIR ...] [--kb-agreement JSON ...] [--kernelbench DIR] [--out DIR]

    --fp32       `agent bench` output dirs of KernelBench levels 1 and 2 at fp32 (the default
                 `--reference-numerics exact`, `--policy strict`): issue 35's headline and
                 issue 33's "levels 1 and 2 keep what they have"
    --level3     the bench of the 36 level-3 networks (8 jobs on one GPU: issue 33)
    --bf16       levels 1 and 2 with `--precision bf16`; --fp16: level 1 with `--precision fp16`
    --kb-agreement  `kb_agreement.json` of benchmarks/kb_judge_agreement.py (KernelBench's
                 judge over the `--export-kernelbench` export of runs under the KernelBench
                 setting, fp32 and bf16: issue 36)
    --kernelbench  the KernelBench problems (default ../shared/kernelbench, else .kb/kb): how
                 many problems each level has, so a problem with no record counts as missing

Reads the files only (`agent.bench.store.load_results`, `agent.bench.report.compute_report`).
A problem named in two dirs of one option counts once, from the last dir (a re-measured run
given after the one it replaces). Writes acceptance.md and acceptance.json under --out (default:
print only). Exit 0 when every criterion was measured and passed, 1 otherwise, 2 on bad
arguments. The targets are the issues' words; where a criterion needs a judgement (a reason
given in the report, host memory against a network's size) the row says REVIEW and lists what
to look at: the script does not decide those.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.bench.headline import problem_level, summary  # noqa: E402
from agent.bench.metrics import code_versions, one_code_version  # noqa: E402
from agent.bench.report import compute_report  # noqa: E402
from agent.bench.store import load_results  # noqa: E402

PASS, FAIL, MISSING, REVIEW = "PASS", "FAIL", "NOT MEASURED", "REVIEW"
CORRECT_STATUSES = ("ok", "slower")
LEVEL3_GEOMEAN = 1.15
LEVEL3_SLOW = 0.97
LEVEL3_MEDIAN_S = 120.0
BF16_CORRECT_SHARE = 0.95
BF16_GEOMEAN = 1.2


@dataclass
class Row:
    issue: int
    criterion: str
    target: str
    measured: str
    result: str
    details: list[str] = field(default_factory=list)


@dataclass
class Lane:
    """One option's benches merged: per problem (level/name) its report row, plus the benches'
    settings."""

    rows: dict[str, dict[str, Any]]
    settings: list[dict[str, Any]]

    @property
    def given(self) -> bool:
        return bool(self.settings)

    def level(self, level: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.rows.items() if k.split("/")[0] == level}

    def setting(self, key: str) -> set[Any]:
        return {s.get(key) for s in self.settings}


def lane_of(benches: list[tuple[dict[str, Any], Any]]) -> Lane:
    """The lane of benches given as (settings, problems), `load_results`'s pair: a later
    bench's row replaces an earlier one's for the same problem."""
    rows: dict[str, dict[str, Any]] = {}
    for s, problems in benches:
        for r in compute_report(s, problems)["problems"]:
            level = problem_level(r["problem"], s.get("problems_path")) or "?"
            rows[f"{level}/{r['problem']}"] = r
    return Lane(rows, [s for s, _ in benches])


def load_lane(dirs: list[str] | None) -> Lane:
    return lane_of([load_results(d) for d in dirs or []])


def level_sizes(kb: Path | None) -> dict[str, int]:
    """Problems per level in the KernelBench folder (level1 76, level2 80, level3 36 in
    ../shared/kernelbench); {} without one."""
    if kb is None or not kb.is_dir():
        return {}
    return {
        d.name: len(list(d.glob("*.py")))
        for d in sorted(kb.iterdir())
        if d.is_dir() and d.name.startswith("level")
    }


def _correct(r: dict[str, Any]) -> bool:
    return r["correct"] > 0


def _verdict(r: dict[str, Any]) -> bool:
    return r["n"] > 0


def _expected(lane: Lane, level: str, sizes: dict[str, int]) -> int:
    return max(sizes.get(level, 0), len(lane.level(level)))


def _count_row(
    issue: int,
    criterion: str,
    lane: Lane,
    levels: tuple[str, ...],
    sizes: dict[str, int],
    test: Any,
    share: float = 1.0,
) -> Row:
    """`test` holds for at least `share` of the levels' problems (missing ones fail it)."""
    if not lane.given:
        return Row(issue, criterion, f"{share:.0%} of the problems", "no bench given", MISSING)
    total = sum(_expected(lane, lv, sizes) for lv in levels)
    rows = {k: r for lv in levels for k, r in lane.level(lv).items()}
    good = sorted(k for k, r in rows.items() if test(r))
    bad = sorted(k for k in rows if k not in good)
    missing = total - len(rows)
    need = math.ceil(share * total)
    details = [f"{k}: {rows[k]['outcome']}" for k in bad]
    if missing:
        details.append(f"{missing} problem(s) of {', '.join(levels)} with no record")
    return Row(
        issue,
        criterion,
        f"{need} of {total}" if share < 1 else f"{total} of {total}",
        f"{len(good)} of {total}",
        PASS if total and len(good) >= need else FAIL,
        details,
    )


def _strict(lane: Lane) -> str | None:
    """Why the lane is not under the strict policy at full fp32 reference numerics, or None."""
    if lane.setting("policy") - {"strict"}:
        return f"policy {sorted(map(str, lane.setting('policy')))}"
    return None


def _geomean_row(
    issue: int, criterion: str, lane: Lane, levels: tuple[str, ...], target: float
) -> Row:
    if not lane.given:
        return Row(issue, criterion, f">= {target:g}x", "no bench given", MISSING)
    rows = [r for lv in levels for r in lane.level(lv).values()]
    s = summary(r["best_speedup"].get("best") for r in rows)
    if s is None:
        return Row(issue, criterion, f">= {target:g}x", "nothing timed", MISSING)
    return Row(
        issue,
        criterion,
        f">= {target:g}x",
        f"{s['geomean']:.3f}x over {s['problems']} problems (median {s['median']:.3f}x, "
        f"trimmed {s['trimmed_geomean']:.3f}x)",
        PASS if s["geomean"] >= target else FAIL,
    )


def issue33(level3: Lane, fp32: Lane, sizes: dict[str, int]) -> list[Row]:
    rows = [
        _count_row(
            33, "every level-3 network reaches a verdict", level3, ("level3",), sizes, _verdict
        ),
        _count_row(
            33,
            "every level-3 network correct all-Triton under the strict policy",
            level3,
            ("level3",),
            sizes,
            _correct,
        ),
    ]
    if level3.given and (why := _strict(level3)):
        rows[-1].result, rows[-1].details = (
            FAIL,
            [f"not the strict policy: {why}", *rows[-1].details],
        )
    if level3.given:
        cheats = sorted(k for k, r in level3.rows.items() if r["statuses"].get("cheat"))
        rows.append(
            Row(
                33,
                "no false `cheat` (every candidate is the project's own draft)",
                "0",
                str(len(cheats)),
                PASS if not cheats else FAIL,
                cheats,
            )
        )
    else:
        rows.append(Row(33, "no false `cheat`", "0", "no bench given", MISSING))
    rows.append(
        _geomean_row(
            33,
            "geomean over the better of eager and torch.compile",
            level3,
            ("level3",),
            LEVEL3_GEOMEAN,
        )
    )
    if level3.given:
        slow = {
            k: r
            for k, r in level3.rows.items()
            if (r["best_speedup"].get("best") or math.inf) < LEVEL3_SLOW
        }
        unexplained = sorted(k for k, r in slow.items() if not r.get("limit"))
        rows.append(
            Row(
                33,
                f"every network below {LEVEL3_SLOW}x has its reason in the report",
                "a reason each",
                f"{len(slow)} below, {len(unexplained)} without a limit",
                FAIL if unexplained else (REVIEW if slow else PASS),
                [
                    f"{k}: {r['best_speedup']['best']:.2f}x, {r.get('limit') or 'no reason'}"
                    for k, r in sorted(slow.items())
                ],
            )
        )
        rows.append(_median_time(level3, sizes))
        peaks = [r.get("peak_host_mb") for r in level3.rows.values() if r.get("peak_host_mb")]
        rows.append(
            Row(
                33,
                "host memory at most a small multiple of the network's weights and activations",
                "judged per network",
                f"peak host MiB median {statistics.median(peaks):.0f}, max {max(peaks):.0f}"
                if peaks
                else "no memory recorded",
                REVIEW if peaks else MISSING,
                [
                    f"{k}: {r.get('peak_host_mb')} MiB host, {r.get('peak_gpu_mb')} MiB GPU"
                    for k, r in sorted(level3.rows.items())
                ],
            )
        )
    else:
        rows += [
            Row(
                33,
                f"every network below {LEVEL3_SLOW}x has its reason",
                "",
                "no bench given",
                MISSING,
            ),
            Row(
                33,
                "median time per network",
                f"<= {LEVEL3_MEDIAN_S:g} s",
                "no bench given",
                MISSING,
            ),
        ]
    rows.append(
        _count_row(
            33,
            "levels 1 and 2 keep what they have: every problem correct",
            fp32,
            ("level1", "level2"),
            sizes,
            _correct,
        )
    )
    return rows


def _median_time(level3: Lane, sizes: dict[str, int]) -> Row:
    """The median over every network of its time (draft + verify + time); a network with no
    record counts as longer than any."""
    total = _expected(level3, "level3", sizes)
    times = [
        r["time_s"] if _verdict(r) and r["time_s"] is not None else math.inf
        for r in level3.level("level3").values()
    ]
    times += [math.inf] * (total - len(times))
    med = statistics.median(times) if times else math.inf
    return Row(
        33,
        "median time per network inside a bench of 8 jobs on one GPU",
        f"<= {LEVEL3_MEDIAN_S:g} s",
        f"{med:.0f} s over {total} networks"
        if math.isfinite(med)
        else "more than any: half have no verdict",
        PASS if med <= LEVEL3_MEDIAN_S else FAIL,
        ["the bench's settings do not record its jobs per GPU: run it with --jobs-per-gpu 8"],
    )


def issue35(fp32: Lane, sizes: dict[str, int]) -> list[Row]:
    rows = [
        _count_row(
            35,
            "levels 1 and 2 correct under the current rules (the rest named)",
            fp32,
            ("level1", "level2"),
            sizes,
            _correct,
        )
    ]
    if not fp32.given:
        return rows + [
            Row(35, "one run of one version of the code", "1 version", "no bench given", MISSING),
            Row(
                35,
                "headline: geomean, median, trimmed geomean",
                "reported",
                "no bench given",
                MISSING,
            ),
        ]
    versions = code_versions(list(fp32.rows.values()))
    rows.append(
        Row(
            35,
            "one run of one version of the code",
            "1 version",
            ", ".join(f"{v}: {n}" for v, n in versions.items()) or "no records",
            PASS if one_code_version(versions) else FAIL,
            ["records written before the code version was kept"] if "unknown" in versions else [],
        )
    )
    level_rows = [r for lv in ("level1", "level2") for r in fp32.level(lv).values()]
    parts, ok = [], True
    for base, name in (("best", "the bar"), ("eager_cudnn_benchmark", "eager cudnn.benchmark")):
        s = summary(r["best_speedup"].get(base) for r in level_rows)
        if s is None:
            parts.append(f"{name}: not timed")
            ok = False
            continue
        parts.append(
            f"{name}: geomean {s['geomean']:.3f}x, median {s['median']:.3f}x, "
            f"trimmed {s['trimmed_geomean']:.3f}x ({s['problems']} problems)"
        )
    rows.append(
        Row(
            35,
            "headline: geomean, median, trimmed geomean over the bar and over eager "
            "with cudnn.benchmark",
            "both reported",
            "; ".join(parts),
            PASS if ok else FAIL,
        )
    )
    return rows


def issue36(
    bf16: Lane, fp16: Lane, agreement: list[dict[str, Any]], sizes: dict[str, int]
) -> list[Row]:
    rows = []
    for lane, want in ((bf16, "bf16"), (fp16, "fp16")):
        if lane.given and lane.setting("precision") != {want}:
            rows.append(
                Row(
                    36,
                    f"the {want} benches run at {want}",
                    want,
                    str(sorted(map(str, lane.setting("precision")))),
                    FAIL,
                )
            )
    rows += [
        _count_row(
            36,
            "bf16, levels 1 and 2: every problem a verdict",
            bf16,
            ("level1", "level2"),
            sizes,
            _verdict,
        ),
        _count_row(
            36,
            "bf16, levels 1 and 2: correct all-Triton",
            bf16,
            ("level1", "level2"),
            sizes,
            _correct,
            share=BF16_CORRECT_SHARE,
        ),
        _geomean_row(
            36,
            "bf16 geomean over the better of eager and torch.compile at bf16",
            bf16,
            ("level1", "level2"),
            BF16_GEOMEAN,
        ),
        _count_row(
            36,
            "fp16 measured on level 1 (every problem a verdict)",
            fp16,
            ("level1",),
            sizes,
            _verdict,
        ),
    ]
    if not agreement:
        return rows + [
            Row(
                36,
                "KernelBench's judge accepts every kernel we call correct",
                "100%",
                "no kb_agreement.json given",
                MISSING,
            ),
            Row(
                36,
                "KernelBench's static checker refuses no candidate",
                "0",
                "no kb_agreement.json given",
                MISSING,
            ),
        ]
    kernels = [k for a in agreement for k in a.get("kernels", [])]
    ours = [k for k in kernels if k.get("ours_correct")]
    answered = [k for k in ours if k.get("kb_accepts") is not None]
    refused = [k for k in ours if k.get("kb_accepts") is False]
    settings = sorted({str(k.get("setting")) for k in kernels})
    rows.append(
        Row(
            36,
            "KernelBench's judge accepts every kernel we call correct (settings: "
            f"{', '.join(settings)})",
            "100%",
            f"{len(answered) - len(refused)} of {len(ours)} accepted, {len(ours) - len(answered)} "
            "without an answer",
            PASS if ours and len(answered) == len(ours) and not refused else FAIL,
            [
                f"{k['setting']} {k['kernel']}: "
                + (
                    "no answer: " + str(k.get("kb_error"))
                    if k.get("kb_accepts") is None
                    else f"refused (static errors {k.get('kb_static_errors')}, max difference "
                    f"{k.get('kb_max_difference')})"
                )
                for k in ours
                if k.get("kb_accepts") is not True
            ],
        )
    )
    static_bad = [k for k in kernels if k.get("kb_static_valid") is False]
    static_seen = [k for k in kernels if k.get("kb_static_valid") is not None]
    rows.append(
        Row(
            36,
            "KernelBench's static checker refuses no candidate",
            "0",
            f"{len(static_bad)} of {len(static_seen)} checked",
            PASS if static_seen and not static_bad else FAIL,
            [f"{k['setting']} {k['kernel']}: {k.get('kb_static_errors')}" for k in static_bad],
        )
    )
    return rows


def markdown(rows: list[Row], command: str) -> str:
    lines = [
        "# Issues 33, 35, 36: done when, against these runs",
        "",
        f"    {command}",
        "",
        "| issue | criterion | target | measured | result |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r.issue} | {r.criterion} | {r.target} | {r.measured} | **{r.result}** |" for r in rows
    ]
    for r in rows:
        if r.details:
            lines += ["", f"**{r.issue}: {r.criterion}** ({r.result})", ""]
            lines += [f"- {d}" for d in r.details[:60]]
            if len(r.details) > 60:
                lines.append(f"- ... {len(r.details) - 60} more (acceptance.json)")
    counts = {res: sum(r.result == res for r in rows) for res in (PASS, FAIL, MISSING, REVIEW)}
    lines += ["", "Results: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)]
    return "\n".join(lines) + "\n"


def default_kernelbench() -> Path | None:
    for p in (ROOT.parent / "shared" / "kernelbench", ROOT / ".kb" / "kb"):
        if p.is_dir():
            return p
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fp32", nargs="+", default=[])
    ap.add_argument("--level3", nargs="+", default=[])
    ap.add_argument("--bf16", nargs="+", default=[])
    ap.add_argument("--fp16", nargs="+", default=[])
    ap.add_argument("--kb-agreement", nargs="+", default=[])
    ap.add_argument("--kernelbench", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        fp32, level3, bf16, fp16 = (
            load_lane(d) for d in (args.fp32, args.level3, args.bf16, args.fp16)
        )
        agreement = [json.loads(Path(p).read_text()) for p in args.kb_agreement]
    except Exception as exc:  # noqa: BLE001 - a bad path or a file that is not a bench
        print(f"acceptance: {exc}", file=sys.stderr)
        return 2
    sizes = level_sizes(args.kernelbench or default_kernelbench())
    rows = (
        issue33(level3, fp32, sizes) + issue35(fp32, sizes) + issue36(bf16, fp16, agreement, sizes)
    )
    command = "python benchmarks/acceptance.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = markdown(rows, command)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "acceptance.md").write_text(text)
        (args.out / "acceptance.json").write_text(
            json.dumps(
                {"command": command, "level_sizes": sizes, "rows": [r.__dict__ for r in rows]},
                indent=1,
            )
            + "\n"
        )
    return 0 if all(r.result == PASS for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
