"""report.html of a bench (`write_bench_html`): settings, the pass@k and fast_p charts, the best
speedup per problem, the headline, the per-problem table (sortable) and the notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.html_report.charts import Chart
from agent.html_report.page import BLUE, GREEN, ORANGE, RED, esc, fmt_pct, fmt_x, page, table, td
from agent.rundir import write_atomic
from tools.checks.arithmetic import cell


def _per_problem(settings: dict[str, Any]) -> Any:
    """Candidates drawn per problem: `per_problem` (1 when the compiler alone drafts), not the
    `--samples` asked for; bench reports written before it was recorded have `samples` only."""
    return settings.get("per_problem") or settings.get("samples")


def render_bench(report: dict[str, Any]) -> str:
    s, m = report.get("settings") or {}, report.get("metrics") or {}
    mode = s.get("mode", "sample")
    problems = report.get("problems") or []
    title = f"triton-agent bench ({mode}, {s.get('backend')}): {s.get('problems_path', '')}"
    body = [f"<h1>{esc(title)}</h1>", _settings(report, s)]
    charts = [_pass_at_k_chart(m, mode), *_fast_p_chart(m), _per_problem_chart(problems)]
    body.append('<h2>Metrics</h2><div class="charts">' + "".join(charts) + "</div>")
    body.extend(_headline(m))
    body.append("<h2>Problems</h2>")
    body.append(_problem_table(problems, s, mode))
    for n in report.get("notes") or []:
        body.append(f'<p class="note">Note: {esc(n)}</p>')
    return page(title, "\n".join(body))


def _settings(report: dict[str, Any], s: dict[str, Any]) -> str:
    """The status, device, protocol and sampling settings, in a sentence."""
    return (
        f"<p><b>Status:</b> {esc(report.get('status'))}. Device: {esc(report.get('device'))}. "
        f"Protocol: {esc(s.get('protocol'))}; {esc(_per_problem(s))} candidate(s) per problem; "
        f"temperature {esc(s.get('temperature'))}, top_p {esc(s.get('top_p'))}; "
        f"{esc(s.get('trials'))} trials, tolerance {esc(s.get('tolerance_preset'))}.</p>"
    )


def _pass_at_k_chart(m: dict[str, Any], mode: str) -> str:
    """A bar per k: pass@k (success@k in loop mode)."""
    label = "success@k" if mode == "loop" else "pass@k"
    pk = m.get("pass_at_k") or {}
    c = Chart(label, [0, 1], [0, 1], ylabel=label, w=360)
    c.bars([f"@{k}" for k in pk], list(pk.values()), [BLUE] * len(pk))
    return c.svg()


def _fast_p_chart(m: dict[str, Any]) -> list[str]:
    """fast_p over p, over eager and over torch.compile; none where only fast_0 is known (on a
    CPU, the correctness rate)."""
    fast = m.get("fast_p") or {}
    if len(fast) <= 1:
        return []
    ps = [float(p) for p in fast]
    c = Chart("fast_p: correct and faster than p", ps, [0, 1], xlabel="p", ylabel="fraction")
    c.series(list(zip(ps, fast.values(), strict=True)), BLUE, "over eager")
    fc = m.get("fast_p_compile") or {}
    if fc:
        c.series([(float(p), v) for p, v in fc.items() if v is not None], ORANGE, "over compile")
    c.xticks(ps)
    c.legend([("over eager", BLUE)] + ([("over torch.compile", ORANGE)] if fc else []))
    return [c.svg()]


def _per_problem_chart(problems: list[dict[str, Any]]) -> str:
    """A bar per problem: its best speedup over eager where any was timed, else the fraction of
    its candidates that are correct."""
    sp = {
        base: [((p.get("best_speedup") or {}).get(base)) for p in problems]
        for base in ("eager", "compile")
    }
    if not any(v for vals in sp.values() for v in vals if v):
        c = Chart("candidates correct per problem", [0, 1], [0, 1], ylabel="fraction")
        c.bars(
            [p["problem"] for p in problems],
            [(p["correct"] / p["n"]) if p.get("n") else None for p in problems],
            [GREEN if p.get("correct") else RED for p in problems],
        )
        return c.svg()
    vals = [v for v in sp["eager"] if v] + [1.0]
    c = Chart(
        "best speedup per problem (over eager)",
        [0, 1],
        vals,
        ylabel="x",
        log_y=True,
        w=min(1040, max(520, 14 * len(problems))),  # one bar per problem, fits the page
    )
    c.bars(
        [p["problem"] for p in problems],
        sp["eager"],
        [GREEN if (v or 0) >= 1 else RED for v in sp["eager"]],
    )
    c.hline(1.0, "1x")
    return c.svg()


def _headline(m: dict[str, Any]) -> list[str]:
    """The headline table (geomean, median, trimmed, capped, >= 1x) and its definition; nothing
    in a report made before it."""
    from agent.bench import headline as hl  # (the bench's modules load when a bench is shown)

    top = hl.table_rows(m.get("headline"))
    if not top:
        return []
    return [
        "<h2>Headline</h2>" + table(hl.HEADERS, [[td(c) for c in r] for r in top]),
        f'<p class="note">{esc((m.get("headline") or {}).get("definition"))}</p>',
    ]


def _problem_table(problems: list[dict[str, Any]], s: dict[str, Any], mode: str) -> str:
    """The sortable table, a row per problem: counts, pass@1, best speedups, statuses (or its
    error), arithmetic."""
    rows = []
    for p in problems:
        b = p.get("best_speedup") or {}
        st = ", ".join(f"{k}×{v}" for k, v in (p.get("statuses") or {}).items())
        p1 = (p.get("pass_at_k") or {}).get("1")
        rows.append(
            [
                td(p.get("problem")),
                td(str(p.get("n")), num=p.get("n")),
                td(str(p.get("correct")), num=p.get("correct")),
                td(fmt_pct(p1), num=p1 if p1 is not None else -1),
                td(fmt_x(b.get("eager")), num=b.get("eager") or 0),
                td(fmt_x(b.get("compile")), num=b.get("compile") or 0),
                td(fmt_x(b.get("best")), num=b.get("best") or 0),
                td(fmt_x(b.get(CB)), num=b.get(CB) or 0),  # beside the bar
                td(st or (p.get("error") or "-")),
                td(cell(p.get("arithmetic"), s.get("precision"))),
            ]
        )
    one = "success@1" if mode == "loop" else "pass@1"
    heads = ["problem", "n", "correct", one, "best vs eager", "best vs compile", "best vs better"]
    heads += ["vs eager cudnn.benchmark", "statuses", "arithmetic"]
    return table(heads, rows, sortable=True)


CB = "eager_cudnn_benchmark"
"""Eager timed with cudnn.benchmark (`tools.orchestrate.baselines.CUDNN_BENCHMARK`): a column beside the bar."""


def write_bench_html(out_dir: str | Path, report: dict[str, Any]) -> Path:
    path = Path(out_dir) / "report.html"
    write_atomic(path, render_bench(report))
    return path
