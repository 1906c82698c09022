"""A markdown summary of one or more `agent bench` output directories (e.g. KernelBench level1
and level2), read from their files alone, so a run stopped before it wrote its report counts
everything it finished:

    python benchmarks/kernelbench_summary.py bench_out/level1 bench_out/level2 > summary.md

One row per directory, then `all` (every problem of them together): problems, problems by
outcome (the status of each problem's best candidate; `incomplete`: no verdict yet; `error`:
the problem itself could not run), pass@1, fast_1 over eager and over torch.compile, geometric
mean speedups, time per problem (median, p90: draft + verify + time) and peak memory (median,
max). Exit 2 when a directory is not a bench output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agent.bench import compute_report, load_results  # noqa: E402
from tools.core.errors import BadInputError  # noqa: E402

# Outcomes in the order a reader looks for them; any other status follows, sorted.
OUTCOME_ORDER = ("ok", "slower", "mismatch", "shape_mismatch", "compile_error", "runtime_error")


def reports(dirs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(label, report) per directory, then ("all", the report over all their problems)."""
    out: list[tuple[str, dict[str, Any]]] = []
    merged: list[Any] = []
    first: dict[str, Any] | None = None
    for d in dirs:
        settings, problems = load_results(d)
        label = Path(d).name or d
        if first is None:
            first = settings
        elif settings["mode"] != first["mode"]:
            raise BadInputError(f"{d} is a {settings['mode']}-mode run, not {first['mode']}")
        out.append((label, compute_report(settings, problems)))
        merged += [(f"{label}/{name}", *rest) for name, *rest in problems]
    if first is not None and len(dirs) > 1:
        out.append(("all", compute_report(first, merged)))
    return out


def render(rows: list[tuple[str, dict[str, Any]]]) -> str:
    s = rows[0][1]["settings"]
    devices = sorted({r["device"] for _, r in rows if r["device"]})
    lines = [
        "# KernelBench summary",
        "",
        f"Backend {s['backend']}, mode {s['mode']}, {s['per_problem']} candidate(s) per problem, "
        f"protocol {s['protocol']} ({s['trials']} trials, tolerance {s['tolerance_preset']}, "
        f"policy {s['policy']}); device {', '.join(devices) or '-'}.",
        "",
        "| set | problems | with a verdict | no verdict | pass@1 | pass@1 of those with a verdict "
        "| fast_1 eager | fast_1 compile | geomean eager | geomean compile | geomean better "
        "| geomean eager fp32 | time/problem median "
        "| p90 | peak host MB median | max | peak GPU MB median | max |",
        "|---|" + "---|" * 17,
    ]
    for label, r in rows:
        m, t = r["metrics"], r["metrics"]["time_per_problem_s"]
        mem, g = m["peak_memory_mb"], m["geomean_speedup"]
        n, nv = r["totals"]["problems"], r["totals"]["no_verdict"]
        cells = [
            label,
            str(n),
            str(n - nv),
            str(nv),
            _pct(pass1(r, judged_only=False)),
            _pct(pass1(r, judged_only=True)),
            _pct(m["fast_p"].get("1")),
            _pct(m["fast_p_compile"].get("1")),
            _geo(g["eager"]),
            _geo(g["compile"]),
            _geo(g.get("best") or {}),
            _geo(g.get("eager_fp32") or {}),
            _num(t["median"], " s"),
            _num(t["p90"], " s"),
            _num(mem["host"]["median"], nd=0),
            _num(mem["host"]["max"], nd=0),
            _num(mem["gpu"]["median"], nd=0),
            _num(mem["gpu"]["max"], nd=0),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    seen = {k for _, r in rows for k in r["metrics"]["outcomes"]}
    cols = [k for k in OUTCOME_ORDER if k in seen]
    cols += sorted(seen - set(cols) - {"incomplete", "error"})
    cols += [k for k in ("error", "incomplete") if k in seen]
    lines += [
        "",
        "Problems by outcome (the status of each problem's best candidate; `incomplete`: no "
        "verdict yet, `error`: the problem could not run):",
        "",
        "| set | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for label, r in rows:
        o = r["metrics"]["outcomes"]
        lines.append(f"| {label} | " + " | ".join(str(o.get(k, 0)) for k in cols) + " |")
    lines.append("")
    for label, r in rows:
        st = r["metrics"]["statuses"]
        lines.append(
            f"Candidate statuses, {label}: " + (", ".join(f"{k} {v}" for k, v in st.items()) or "-")
        )
    # Each directory's rows name its problems; the merged row's names carry the label already.
    merged = rows[-1][1] if len(rows) > 1 else rows[0][1]
    errors = [(p["problem"], p["error"]) for p in merged["problems"] if p["error"]]
    if errors:
        lines += ["", f"Problems that could not run ({len(errors)}):", ""]
        lines += [f"- {name}: {msg.strip().splitlines()[0][:160]}" for name, msg in errors[:30]]
        if len(errors) > 30:
            lines.append(f"- ... and {len(errors) - 30} more")
    timed = any(r["timed"] for _, r in rows)
    lines += [
        "",
        "pass@1 with one candidate per problem is the correctness rate; the first pass@1 counts "
        "a problem without a verdict as failed. fast_1: problems with a correct kernel faster "
        "than the baseline (eager or torch.compile), over all problems of the set, those "
        "without a verdict included. Time per problem: its candidates' draft + "
        "verify + time (waits for a GPU slot included); peak memory: the largest any of its "
        "jobs reported, over the problems where one did."
        + ("" if timed else " Nothing was timed (no GPU, or no correct kernel)."),
    ]
    return "\n".join(lines) + "\n"


def pass1(report: dict[str, Any], *, judged_only: bool) -> float | None:
    """Mean pass@1 over the problems: all of them (a problem without a verdict counts as
    failed), or only those with a verdict. The report's own pass@1 is withheld while any
    problem lacks a candidate, which a run stopped at a deadline leaves."""
    vals = [p["pass_at_k"].get("1") for p in report["problems"]]
    vals = [v for v in vals if v is not None] if judged_only else [v or 0.0 for v in vals]
    return sum(vals) / len(vals) if vals else None


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _geo(g: dict[str, Any]) -> str:
    return "-" if g.get("value") is None else f"{g['value']:.2f}x ({g['problems']})"


def _num(v: float | None, unit: str = "", nd: int = 1) -> str:
    return "-" if v is None else f"{v:.{nd}f}{unit}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", help="bench output directories (--out of agent bench)")
    args = ap.parse_args(argv)
    try:
        rows = reports(args.dirs)
    except BadInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
