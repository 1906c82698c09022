"""report.html of a run (`write_run_html`): the result, the speedup chart (or the verdict strip of
a run nothing was timed in), the attempts table, and per attempt its feedback, prompt, diff from
the previous kernel and profile."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.html_report.charts import Chart
from agent.html_report.page import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    RED,
    STATUS_COLOR,
    badge,
    esc,
    fmt_pct,
    fmt_x,
    page,
    table,
    td,
)
from agent.rundir import write_atomic
from tools.checks.arithmetic import cell


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """report.json and, per attempt, attempt.json with its kernel, prompt and verdict."""
    d = Path(run_dir)
    report = _read_json(d / "report.json") or {}
    attempts = []
    adir = d / "attempts"
    for sub in sorted(adir.iterdir() if adir.is_dir() else [], key=lambda p: p.name):
        if not sub.is_dir() or not sub.name.isdigit():
            continue
        meta = _read_json(sub / "attempt.json") or {"index": int(sub.name)}
        meta["code"] = _read_text(sub / "kernel.py")
        meta["prompt"] = _read_text(sub / "prompt.txt")
        meta["verdict"] = _read_json(sub / "verdict.json") or {}
        attempts.append(meta)
    return report, attempts


def speedup_chart(attempts: Sequence[dict[str, Any]]) -> str:
    """Speedup of each timed attempt over eager and over torch.compile, best so far (step)."""
    pts = {
        base: [
            (a["index"], (a.get("speedups") or {}).get(base))
            for a in attempts
            if (a.get("speedups") or {}).get(base)
        ]
        for base in ("eager", "compile")
    }
    ys = [y for p in pts.values() for _, y in p] + [1.0]
    xs = [a["index"] for a in attempts]
    c = Chart("speedup over attempts", xs, ys, xlabel="attempt", ylabel="speedup (x)", log_y=True)
    c.hline(1.0, "baseline = 1x")
    c.series(pts["eager"], BLUE, "over eager")
    c.series(pts["compile"], ORANGE, "over torch.compile")
    best, best_pts = 0.0, []
    for x, y in pts["eager"]:
        best = max(best, y)
        best_pts.append((x, best))
    c.series(best_pts, GREEN, "best so far (eager)", step=True)
    c.xticks(sorted(set(xs)))
    c.legend([("over eager", BLUE), ("over torch.compile", ORANGE), ("best so far", GREEN)])
    return c.svg()


def status_strip(attempts: Sequence[dict[str, Any]]) -> str:
    """One bar per attempt, green when correct: the chart of a run nothing was timed in."""
    labels = [str(a.get("index")) for a in attempts]
    c = Chart("verdict per attempt (not timed)", [0, 1], [0, 1], xlabel="attempt", ylabel="correct")
    c.bars(
        labels,
        [1.0 if a.get("correct") else 0.15 for a in attempts],
        [STATUS_COLOR.get(a.get("status") or "", RED) for a in attempts],
    )
    return c.svg()


def kernels_chart(kernels: Sequence[dict[str, Any]]) -> str:
    top = list(kernels)[:8]
    c = Chart(
        "device time per forward, by kernel",
        [0, 1],
        [0] + [k.get("time_us") or 0 for k in top],
        ylabel="us",
        w=480,
        h=240,
    )
    c.bars(
        [k.get("name", "?") for k in top],
        [k.get("time_us") for k in top],
        [BLUE if k.get("triton") else GREY for k in top],
    )
    return c.svg()


def roofline_chart(roof: dict[str, Any], peaks: dict[str, Any] | None) -> str:
    """Log-log roofline: the memory roof up to the ridge, the compute roof after, this kernel."""
    intensity, rate = roof.get("intensity") or 0.0, roof.get("flop_rate") or 0.0
    bw = (peaks or {}).get("bandwidth") or (
        roof["bandwidth"] / roof["bandwidth_fraction"] if roof.get("bandwidth_fraction") else None
    )
    ridge = roof.get("ridge") or 0.0
    if not (intensity > 0 and rate > 0 and bw and ridge > 0):
        frac = roof.get("bandwidth_fraction") or 0.0
        c = Chart(
            f"{100 * frac:.1f}% of peak bandwidth (no FLOPs counted)",
            [0, 1],
            [0, 1],
            ylabel="fraction of peak",
            w=300,
        )
        c.bars(["bandwidth"], [frac], [BLUE])
        c.hline(1.0, "peak")
        return c.svg()
    peak_flops = bw * ridge
    xs = [min(intensity, ridge) / 10, max(intensity, ridge) * 10]
    c = Chart(
        f"roofline ({roof.get('bound', '?')}-bound, {100 * (roof.get('fraction') or 0):.0f}% of roof)",
        xs,
        [bw * xs[0], peak_flops * 1.5, rate],
        xlabel="FLOP / byte",
        ylabel="FLOP/s",
        log_x=True,
        log_y=True,
    )
    c.series([(xs[0], bw * xs[0]), (ridge, peak_flops), (xs[1], peak_flops)], GREY, "roofs")
    c.series([(intensity, rate)], RED, "this kernel")
    c.legend([("roofs", GREY), ("this kernel", RED)])
    return c.svg()


def diff_html(old: str | None, new: str | None, old_name: str, new_name: str) -> str:
    if old is None or new is None:
        return '<p class="note">no previous kernel to compare with</p>'
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=2
        )
    )
    if not lines:
        return '<p class="note">identical to the previous kernel</p>'
    out = []
    for line in lines[:600]:
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        cls = "hunk" if line.startswith("@@") else cls
        out.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    more = f"\n... {len(lines) - 600} more lines" if len(lines) > 600 else ""
    return '<pre class="diff">' + "\n".join(out) + esc(more) + "</pre>"


def profile_html(p: dict[str, Any]) -> str:
    parts = []
    kernels = p.get("kernels") or []
    if kernels:
        rows = [
            [
                td(k.get("name", "?")),
                td(f"{k.get('calls', 0):g}", num=k.get("calls")),
                td(f"{k.get('time_us', 0):.2f}", num=k.get("time_us")),
                td(fmt_pct(k.get("share")), num=k.get("share")),
                td("yes" if k.get("triton") else "no"),
            ]
            for k in kernels
        ]
        parts.append(table(["kernel", "calls", "us / forward", "share", "Triton"], rows))
    charts = []
    if kernels:
        charts.append(kernels_chart(kernels))
    if p.get("roofline"):
        charts.append(roofline_chart(p["roofline"], p.get("peaks")))
    if charts:
        parts.append('<div class="charts">' + "".join(charts) + "</div>")
    kb = p.get("kernelbench") or {}
    if kb.get("candidate"):
        cand, eager = kb["candidate"], kb.get("eager") or {}
        parts.append(
            f"<p>KernelBench timing (mean ± std): candidate {cand['mean']:.4f} ± "
            f"{cand.get('std', 0):.4f} ms, eager {eager.get('mean', float('nan')):.4f} ms, "
            f"speedup {fmt_x(kb.get('speedup'))}</p>"
        )
    return "".join(parts)


def render_run(run_dir: str | Path) -> str:
    report, attempts = load_run(run_dir)
    title = f"triton-agent {report.get('command', 'run')}: {report.get('problem', run_dir)}"
    verdict = "a correct kernel was found" if report.get("correct") else "no correct kernel"
    if report.get("correct") and report.get("timed"):
        verdict += " and it is faster" if report.get("faster") else ", not faster than the target"
    elif report.get("correct"):
        verdict += " (CPU: verified under the Triton interpreter, not timed)"
    body = [f"<h1>{esc(title)}</h1>"]
    body.append(
        f"<p><b>Result:</b> {esc(report.get('status'))}: {esc(verdict)}. Stopped because: "
        f"{esc(report.get('stop_reason'))}. Device: {esc(report.get('device'))}. Run "
        f"<code>{esc(report.get('run_id'))}</code>.</p>"
    )
    best = report.get("best")
    if best:
        body.append(
            f"<p><b>Best:</b> attempt {esc(best.get('index'))} ({esc(best.get('source'))}): "
            f"{esc(best.get('summary'))}</p>"
        )
    b = report.get("baselines") or {}
    if b:
        shown = ", ".join(f"{k}: {v}" for k, v in b.items() if k != "available")
        body.append(f"<p><b>Baselines:</b> {esc(shown or b.get('reason'))}</p>")
    timed = any(a.get("speedups") for a in attempts)
    body.append("<h2>Attempts</h2>")
    body.append(speedup_chart(attempts) if timed else status_strip(attempts))
    rows = []
    for a in attempts:
        sp = a.get("speedups") or {}
        rows.append(
            [
                td(str(a.get("index")), num=a.get("index")),
                td(str(a.get("round", ""))),
                td(a.get("source", "")),
                td(badge(a.get("status") or "?"), raw=True),
                td(fmt_x(sp.get("eager")), num=sp.get("eager") or 0),
                td(fmt_x(sp.get("compile")), num=sp.get("compile") or 0),
                td(cell((a.get("verdict") or {}).get("arithmetic"), report.get("precision"))),
                td((a.get("summary") or "")[:200]),
            ]
        )
    heads = ["#", "round", "source", "status", "vs eager", "vs compile", "arithmetic", "summary"]
    body.append(table(heads, rows, sortable=True))
    body.append("<h2>Each attempt</h2>")
    previous: tuple[str, str | None] | None = None
    best_index = (best or {}).get("index")
    for a in attempts:
        i = a.get("index")
        is_open = " open" if i == best_index else ""  # the best attempt is shown unfolded
        part = [
            f'<details id="attempt-{esc(i)}"{is_open}><summary>attempt {esc(i)} '
            f"({esc(a.get('source'))}) {badge(a.get('status') or '?')} "
            f"{esc((a.get('summary') or '')[:120])}</summary>"
        ]
        part.append("<h3>Feedback (what the next prompt tells the model)</h3>")
        part.append(f"<pre>{esc(a.get('feedback') or '(none)')}</pre>")
        if a.get("prompt"):
            part.append(
                f"<details><summary>prompt that drafted it</summary><pre>{esc(a['prompt'])}"
                "</pre></details>"
            )
        if a.get("code") is not None:
            if previous is not None:
                part.append(f"<h3>Diff from attempt {esc(previous[0])}</h3>")
                part.append(diff_html(previous[1], a["code"], previous[0], str(i)))
            previous = (str(i), a["code"])
        if a.get("profile"):
            part.append("<h3>Profile</h3>" + profile_html(a["profile"]))
        part.append("</details>")
        body.append("".join(part))
    for n in report.get("notes") or []:
        body.append(f'<p class="note">Note: {esc(n)}</p>')
    return page(title, "\n".join(body))


def write_run_html(run_dir: str | Path) -> Path:
    path = Path(run_dir) / "report.html"
    write_atomic(path, render_run(run_dir))
    return path
