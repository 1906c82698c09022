"""The report: metrics per problem and overall (report.json), the plots, and report.md
(`agent.bench.markdown`) and report.html, from the records alone."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.bench.config import BENCH_SCHEMA_VERSION
from agent.bench.headline import headline, problem_level
from agent.bench.markdown import render_markdown
from agent.bench.metrics import (
    FAST_P,
    REPORTED,
    code_versions,
    fast_p,
    geomean,
    pass_at_k,
    percentile,
    solved_within,
)
from agent.bench.records import SampleRecord
from agent.bench.store import BenchDir, ProblemRows, load_results
from agent.rundir import write_atomic
from tools.checks.arithmetic import count_kernels, summary

log = logging.getLogger(__name__)


def rebuild_report(
    out: str | os.PathLike[str], *, elapsed_s: float | None = None, interrupted: bool = False
) -> dict[str, Any]:
    """Read OUT/ and write report.json, report.md and the plots; returns the report object.
    `interrupted`: the run was stopped (SIGINT) before it saw every problem."""
    bdir = BenchDir(out)
    settings, problems = load_results(out)
    report = compute_report(settings, problems)
    add_arithmetic(report, read_arithmetic(bdir, problems))
    if elapsed_s is not None:
        report["elapsed_s"] = round(elapsed_s, 1)
    report["out"] = str(bdir.path)
    notes = report["notes"]
    if interrupted:
        report["interrupted"] = True
        report["status"] = "incomplete"
        notes.append("the run was interrupted: rerun the same command to resume")
    plots = write_plots(bdir.path, report)
    notes.extend(plots)
    bdir.write_json("report.json", report)
    write_atomic(bdir.path / "report.md", render_markdown(report))
    from agent.html_report import write_bench_html

    write_bench_html(bdir.path, report)  # report.html: one self-contained file
    return report


def compute_report(settings: dict[str, Any], problems: ProblemRows) -> dict[str, Any]:
    """The metrics. Pure: settings and, per problem, (name, records, error, finished) in; the
    report object out. `finished` is the loop's "run ended" mark (None in sample mode: there a
    problem is complete when it has all its candidates)."""
    mode = settings["mode"]
    per = int(settings.get("per_problem") or settings["samples"])
    ks = [int(k) for k in settings["ks"]]
    rows = [
        problem_row(name, recs, err, finished, mode=mode, per=per, ks=ks)
        for name, recs, err, finished in problems
    ]
    status_total: Counter[str] = Counter()
    for r in rows:
        status_total.update(r["statuses"])
    timed = any(r["best_speedup"]["eager"] is not None for r in rows)
    device = next((s["device"] for r in rows for s in r["samples"]), None)
    solved = [r["correct"] > 0 for r in rows]
    notes: list[str] = []
    pass_k = _overall_pass_at_k(rows, ks, notes)
    if not timed:
        notes.append(f"only fast_0 (= the correctness rate) is reported: {_untimed_why(device)}")
    incomplete = [r["problem"] for r in rows if not r["complete"]]
    notes.extend(_completion_notes(rows, incomplete, mode))
    versions = code_versions(rows)
    if len(versions) > 1:
        notes.append(
            f"the verdicts come from {len(versions)} versions of this project's code "
            f"({', '.join(f'{v}: {n}' for v, n in versions.items())} candidates): "
            "figures from one version need one run of one version"
        )
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "command": "bench",
        "status": "ok" if rows and not incomplete else "incomplete",
        "settings": settings,
        "device": device,
        "timed": timed,
        "metrics": {
            "pass_at_k": pass_k,
            **_overall_fast_p(rows, timed),
            "correct_rate": sum(solved) / len(rows) if rows else None,
            "geomean_speedup": _geomean_speedups(rows),
            "headline": _headline(settings, rows),
            "statuses": dict(sorted(status_total.items())),
            "outcomes": dict(sorted(Counter(r["outcome"] for r in rows).items())),
            **_time_and_memory(rows),
        },
        "totals": {
            "problems": len(rows),
            "complete": len(rows) - len(incomplete),
            "no_verdict": sum(1 for r in rows if r["n"] == 0),
            "candidates": sum(r["n"] for r in rows),
            "correct_candidates": sum(r["correct"] for r in rows),
            "code_versions": versions,
        },
        "problems": rows,
        "notes": notes,
    }


def problem_row(
    name: str,
    recs: Sequence[SampleRecord],
    err: str | None,
    finished: bool | None,
    *,
    mode: str,
    per: int,
    ks: Sequence[int],
) -> dict[str, Any]:
    """One problem's row of the report: its candidates' counts, pass@k (success@k in loop
    mode), best speedups, outcome, cost and the candidates themselves."""
    n = len(recs)
    statuses = Counter(r.status for r in recs)
    return {
        "problem": name,
        "n": n,
        "correct": sum(r.correct for r in recs),
        "complete": (finished if finished is not None else n >= per) and err is None,
        "error": err,
        "pass_at_k": _problem_pass_at_k(recs, mode, ks),
        "statuses": dict(sorted(statuses.items())),
        "best_speedup": _best_speedups(recs),
        "fast_p_per_sample": _problem_fast_p(recs),
        "outcome": problem_outcome(recs, err),
        "limit": _limit_of(recs),
        "precision": _precision_of(recs),
        **problem_cost(recs),
        "samples": [r.to_dict() for r in recs],
    }


def _best_speedups(recs: Sequence[SampleRecord]) -> dict[str, float | None]:
    """The best correct candidate's speedup over each of REPORTED (None where none timed)."""
    best: dict[str, float | None] = {}
    for base in REPORTED:
        vals = [r.speedups[base] for r in recs if r.correct and r.speedups.get(base)]
        best[base] = max(vals) if vals else None
    return best


def _problem_pass_at_k(
    recs: Sequence[SampleRecord], mode: str, ks: Sequence[int]
) -> dict[str, float | None]:
    """pass@k of one problem (None where it has fewer than k candidates); in loop mode
    success@k: a correct kernel among the first k drafted, or a free one (compiler, given)."""
    n = len(recs)
    if mode == "loop":
        free = any(r.correct for r in recs if r.source in ("compiler", "given"))
        drafted = [r.correct for r in recs if r.source not in ("compiler", "given")]
        return {
            str(k): (1.0 if solved_within(drafted, k, free) else 0.0) if n else None for k in ks
        }
    c = sum(r.correct for r in recs)
    return {str(k): pass_at_k(n, c, k) if 0 < n and k <= n else None for k in ks}


def _problem_fast_p(recs: Sequence[SampleRecord]) -> dict[str, float | None]:
    """Per p of FAST_P: the fraction of the problem's candidates correct and faster than p
    over eager (fast_0: correct)."""
    n = len(recs)
    out: dict[str, float | None] = {}
    for p in FAST_P:
        hits = sum(1 for r in recs if r.correct and (p <= 0 or (r.speedups.get("eager") or 0) > p))
        out[_pkey(p)] = hits / n if n else None
    return out


def _overall_pass_at_k(
    rows: list[dict[str, Any]], ks: Sequence[int], notes: list[str]
) -> dict[str, float | None]:
    """pass@k averaged over the problems; None, with a note, where a problem has too few
    candidates for k."""
    pass_k: dict[str, float | None] = {}
    for k in ks:
        vals = [r["pass_at_k"][str(k)] for r in rows]
        if rows and all(v is not None for v in vals):
            pass_k[str(k)] = sum(vals) / len(vals)
        else:
            pass_k[str(k)] = None
            short = [r["problem"] for r, v in zip(rows, vals, strict=True) if v is None]
            notes.append(
                f"pass@{k} not reported: {len(short)} problem(s) have fewer than {k} "
                f"evaluated candidates ({', '.join(short[:5])})"
            )
    return pass_k


FAST_P_OVER = {"fast_p": "eager", "fast_p_compile": "compile", "fast_p_best": "best"}
"""The report's fast_p metrics and the baseline each counts a problem's best speedup over."""


def _overall_fast_p(rows: list[dict[str, Any]], timed: bool) -> dict[str, dict[str, Any]]:
    """fast_p over eager, over torch.compile, over the better of the two, and per sample
    (only fast_0 where nothing was timed)."""
    solved = [r["correct"] > 0 for r in rows]
    fast: dict[str, dict[str, Any]] = {name: {} for name in (*FAST_P_OVER, "fast_p_per_sample")}
    for p in FAST_P:
        if p > 0 and not timed:
            continue
        key = _pkey(p)
        for name, base in FAST_P_OVER.items():
            bests = [r["best_speedup"][base] for r in rows]
            fast[name][key] = fast_p(bests, solved, p) if rows else None
        vals = [r["fast_p_per_sample"][key] for r in rows if r["n"]]
        fast["fast_p_per_sample"][key] = sum(vals) / len(vals) if vals else None
    return fast


def _untimed_why(device: str | None) -> str:
    """Why no speedup is reported, in words for the report's note."""
    if device == "cpu":
        return "on the CPU speedups are unavailable (Triton interpreter timings are not speed)"
    if device is None:  # nothing evaluated yet: the device is not known from the records
        return "no candidate was evaluated"
    return "no correct kernel was timed"


def _geomean_speedups(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per baseline of REPORTED: the geometric mean of the problems' best speedups."""
    geo = {}
    for base in REPORTED:
        vals = [v for r in rows if (v := r["best_speedup"].get(base)) is not None]
        geo[base] = {"value": geomean(vals), "problems": len(vals)}
    return geo


def _time_and_memory(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The time per problem (median, p90, total) and the peak host and GPU memory per problem
    (median, max): `metrics.time_per_problem_s` and `metrics.peak_memory_mb`."""
    times = [r["time_s"] for r in rows if r["time_s"] is not None]
    peaks = {
        where: [r[f"peak_{where}_mb"] for r in rows if r[f"peak_{where}_mb"] is not None]
        for where in ("host", "gpu")
    }
    return {
        "time_per_problem_s": {
            "median": _round(percentile(times, 0.5)),
            "p90": _round(percentile(times, 0.9)),
            "total": _round(sum(times)) if times else None,
            "problems": len(times),
        },
        "peak_memory_mb": {
            where: {
                "median": _round(percentile(vals, 0.5)),
                "max": _round(max(vals)) if vals else None,
                "problems": len(vals),
            }
            for where, vals in peaks.items()
        },
    }


def _completion_notes(rows: list[dict[str, Any]], incomplete: list[str], mode: str) -> list[str]:
    """Notes on the problems not finished (a rerun resumes), those that could not run (the
    problem must change) and, in loop mode, what success@k means."""
    notes = []
    failed = [r["problem"] for r in rows if r["error"]]
    unfinished = [name for name in incomplete if name not in failed]
    if unfinished:
        notes.append(
            f"{len(unfinished)} problem(s) incomplete: {', '.join(unfinished)} "
            "(rerun the same command to resume)"
        )
    if failed:  # a rerun would fail the same way: the problem itself must change
        notes.append(
            f"{len(failed)} problem(s) could not run: {', '.join(failed)} (see each one's "
            "error; fix the problem file, rerunning alone will not help)"
        )
    if mode == "loop":
        notes.append(
            "loop mode: pass@k is success@k, a correct kernel among the first k "
            "candidates the agent drafted with feedback (not the unbiased estimator)"
        )
    return notes


def _headline(settings: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`agent.bench.headline.headline` over the problems' rows, each at its level."""
    level = settings.get("problems_path")
    return headline((problem_level(r["problem"], level), r["best_speedup"]) for r in rows)


def _precision_of(recs: Sequence[SampleRecord]) -> str:
    """The precision of the problem's fastest correct candidate, else of its first candidate
    ("" where neither calls the GEMM template or the convolutions)."""
    shown = _reported(recs)
    return shown.precision if shown is not None else ""


def _reported(recs: Sequence[SampleRecord]) -> SampleRecord | None:
    """The candidate a problem's row describes: its fastest correct one, else its first
    correct one, else its first."""
    timed = [r for r in recs if r.correct and r.speedups.get("best")]
    if timed:
        return max(timed, key=lambda r: r.speedups["best"])
    pool = [r for r in recs if r.correct] or list(recs)
    return pool[0] if pool else None


def read_arithmetic(bdir: BenchDir, problems: ProblemRows) -> dict[tuple[str, int], list[str]]:
    """Each evaluated candidate's `Verdict.arithmetic` (tools/checks/arithmetic.py) by (problem,
    sample), from its verdict.json; a verdict made before the field has none."""
    out: dict[tuple[str, int], list[str]] = {}
    for name, recs, _, _ in problems:
        for r in recs:
            try:
                verdict = json.loads((bdir.sample_dir(name, r.sample) / "verdict.json").read_text())
            except (OSError, ValueError):
                continue
            found = verdict.get("arithmetic") if isinstance(verdict, dict) else None
            if isinstance(found, list):
                out[(name, r.sample)] = [str(a) for a in found]
    return out


def add_arithmetic(report: dict[str, Any], arithmetic: dict[tuple[str, int], list[str]]) -> None:
    """Each candidate's arithmetic into `report` (`compute_report`'s): on its sample, on its
    problem's row (the candidate the row describes: `_reported`), counted in
    `metrics.arithmetic` over the problems with a correct kernel, and that count as a note."""
    for row in report["problems"]:
        for sample in row["samples"]:
            sample["arithmetic"] = arithmetic.get((row["problem"], sample["sample"]), [])
        recs = [SampleRecord.from_dict(d) for d in row["samples"]]
        shown = _reported(recs)
        row["arithmetic"] = arithmetic.get((row["problem"], shown.sample), []) if shown else []
    counts = count_kernels(
        (r["problem"], r["arithmetic"]) for r in report["problems"] if r["correct"]
    )
    precision = (report.get("settings") or {}).get("precision", "fp32")
    if precision != "fp32":  # bf16/fp16 are a half-precision problem's own arithmetic
        counts["outside_fp32_contract"] = []
        counts["fp32_contract"] = f"does not apply at {precision} (docs/verification.md)"
    report["metrics"]["arithmetic"] = counts
    line = summary(counts, "problems' reported kernels")
    if line:
        report["notes"].insert(0, line[0].upper() + line[1:])


def _limit_of(recs: Sequence[SampleRecord]) -> str:
    """The limit of the problem's fastest correct candidate (over the better baseline)."""
    timed = [r for r in recs if r.correct and r.speedups.get("best")]
    return max(timed, key=lambda r: r.speedups["best"]).limit if timed else ""


def problem_outcome(recs: Sequence[SampleRecord], err: str | None) -> str:
    """One status per problem: `ok` (a correct candidate, not slower than eager where timed),
    `slower` (correct ones, all slower), else the failing status most of its candidates got
    (the earliest on a tie); with no verdict at all, `error` (the problem could not run) or
    `incomplete` (not reached yet)."""
    if not recs:
        return "error" if err else "incomplete"
    correct = [r.status for r in recs if r.correct]
    if correct:
        return "slower" if all(s == "slower" for s in correct) else "ok"
    counts = Counter(r.status for r in recs)
    return max(counts, key=lambda s: (counts[s], -[r.status for r in recs].index(s)))


def problem_cost(recs: Sequence[SampleRecord]) -> dict[str, float | None]:
    """What a problem took: `time_s`, the sum of its candidates' draft + verify + time;
    `span_s`, from the first one's start to the last one's end (None where a record lacks
    them, e.g. written by an older version; over a resumed run it includes the pause);
    `peak_host_mb` / `peak_gpu_mb`, the largest peak memory any of its candidates reported."""
    time_s = sum(r.wall_s or r.duration_s for r in recs) if recs else None
    starts = [r.started_at for r in recs if r.started_at is not None]
    ends = [r.ended_at for r in recs if r.ended_at is not None]
    span = max(ends) - min(starts) if recs and len(starts) == len(ends) == len(recs) else None
    out: dict[str, float | None] = {"time_s": _round(time_s), "span_s": _round(span)}
    for where, key in (("host", "host_peak_mb"), ("gpu", "gpu_peak_mb")):
        vals = [r.memory[key] for r in recs if isinstance(r.memory.get(key), (int, float))]
        out[f"peak_{where}_mb"] = _round(max(vals)) if vals else None
    return out


def _round(v: float | None, nd: int = 1) -> float | None:
    return None if v is None else round(v, nd)


def _pkey(p: float) -> str:
    return f"{p:g}"


def write_plots(out: Path, r: dict[str, Any]) -> list[str]:
    """passk.png and speedup.png; returns notes about plots not drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["plots not drawn: matplotlib is not installed (pip install 'triton-agent[plot]')"]
    notes = []
    rows = [p for p in r["problems"] if p["n"]]
    if rows:
        nmax = min(p["n"] for p in rows)
        ks = list(range(1, nmax + 1))
        ys = []
        for k in ks:
            if r["settings"]["mode"] == "loop":
                vals = []
                for p in rows:
                    s = p["samples"]
                    free = any(x["correct"] for x in s if x["source"] in ("compiler", "given"))
                    drafted = [x["correct"] for x in s if x["source"] not in ("compiler", "given")]
                    vals.append(1.0 if solved_within(drafted, k, free) else 0.0)
            else:
                vals = [pass_at_k(p["n"], p["correct"], k) for p in rows]
            ys.append(100 * sum(vals) / len(vals))
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(ks, ys, marker="o")
        ax.set_xlabel("k")
        ax.set_ylabel("success@k (%)" if r["settings"]["mode"] == "loop" else "pass@k (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{r['settings']['mode']} mode, {len(rows)} problems")
        ax.grid(alpha=0.3)
        _save(fig, plt, out / "passk.png")
    speeds = {
        b: sorted(v for p in rows if (v := p["best_speedup"][b]) is not None)
        for b in ("eager", "compile")
    }
    if speeds["eager"] or speeds["compile"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for b, vals in speeds.items():
            if vals:
                ax.plot(
                    range(1, len(vals) + 1),
                    vals,
                    marker="o",
                    linestyle="",
                    label=f"over {'torch.compile' if b == 'compile' else b}",
                )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("problem (sorted by speedup)")
        ax.set_ylabel("best correct kernel's speedup")
        ax.legend()
        _save(fig, plt, out / "speedup.png")
    else:
        notes.append("speedup.png not drawn: no correct kernel was timed")
    return notes


def _save(fig: Any, plt: Any, path: Path) -> None:
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)
