"""report.html for a run and for a bench: one self-contained file (inline CSS, inline SVG charts,
a few lines of inline script, no network), rendered from the files the run or bench wrote.

Run (`runs/<id>/report.html`, `write_run_html`): the result, a chart of each attempt's speedup
over eager and over torch.compile with the best so far (on a CPU run, where nothing is timed, a
strip of each attempt's verdict instead), the attempts table, and per attempt: the feedback it
produced, the prompt that drafted it, the diff from the previous attempt's kernel, and for a timed
one the per-kernel profile breakdown and its place on the roofline.

Bench (`OUT/report.html`, `write_bench_html`): settings, pass@k and fast_p charts, the best speedup
per problem, the per-problem table (sortable) and the notes.

Charts are drawn here, as SVG, so the file opens offline and in any browser; the script only sorts
tables and records what was drawn (`data-charts`, `data-charts-drawn` on <body>, and JS errors in
`data-errors`) for the headless-browser test.
"""

from __future__ import annotations

import difflib
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.rundir import write_atomic
from tools.arithmetic import cell

GREEN, RED, BLUE, ORANGE, GREY = "#2e7d32", "#c62828", "#1565c0", "#ef6c00", "#757575"
STATUS_COLOR = {"ok": GREEN, "slower": ORANGE}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1100px;padding:16px 24px;color:#212121}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5;cursor:pointer}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
pre{background:#fafafa;border:1px solid #eee;padding:8px;overflow:auto;max-height:420px;
font-size:12px}
.diff .add{color:#1b5e20;background:#e8f5e9}.diff .del{color:#b71c1c;background:#ffebee}
.diff .hunk{color:#1565c0}details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.note{color:#6d4c41}.charts{display:flex;flex-wrap:wrap;gap:16px}
svg.chart{background:#fff;border:1px solid #eee;flex:none}svg text{font:11px system-ui,sans-serif}
"""

SCRIPT = """
(function () {
document.body.dataset.errors = "";
window.addEventListener("error", function (e) { document.body.dataset.errors += e.message + ";"; });
document.querySelectorAll("table.sortable th").forEach(function (th, col) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0], rows = Array.from(body.rows);
    var asc = th.dataset.asc !== "1"; th.dataset.asc = asc ? "1" : "0";
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v || a.cells[col].textContent;
      var y = b.cells[col].dataset.v || b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
var folded = Array.from(document.querySelectorAll("details:not([open])"));
folded.forEach(function (d) { d.open = true; });  // measure every chart at its real size
var charts = document.querySelectorAll("svg.chart"), drawn = 0;
charts.forEach(function (s) {
  var b = s.getBoundingClientRect();
  if (b.width > 0 && b.height > 0 && s.querySelectorAll("[data-mark]").length > 0) drawn++;
});
folded.forEach(function (d) { d.open = false; });
document.body.dataset.charts = charts.length;
document.body.dataset.chartsDrawn = drawn;
})();
"""


def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _x(v: Any) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def _pct(v: Any) -> str:
    return f"{100 * v:.1f}%" if isinstance(v, (int, float)) else "-"


def badge(status: str) -> str:
    return f'<span class="badge" style="background:{STATUS_COLOR.get(status, RED)}">{esc(status)}</span>'


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, sortable: bool = False) -> str:
    """Cells are HTML already (escape text with `esc`)."""
    cls = ' class="sortable"' if sortable else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def td(text: str, *, num: Any = None, raw: bool = False) -> str:
    v = f' data-v="{esc(num)}"' if num is not None else ""
    cls = ' class="num"' if num is not None else ""
    return f"<td{cls}{v}>{text if raw else esc(text)}</td>"


# ---------------------------------------------------------------------------------------------
# SVG charts


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Ticks on round values (1, 2, 2.5 or 5 times a power of ten apart) from at or below `lo`
    to at or above `hi`, at most `most` of them: 0 to 1 gives 0, 0.2, ..., 1 (not 0 to 1.08 in
    steps of 0.27)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi - lo < 1e-12:
        lo, hi = (lo - 0.5, hi + 0.5) if lo else (0.0, 1.0)
    raw = (hi - lo) / (most - 1)
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * power
        first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
        if last - first + 1 <= most:
            break
    return [round(i * step, 12) for i in range(first, last + 1)]


class Chart:
    """A plot area with axes; x and y scales linear or log10."""

    def __init__(
        self,
        title: str,
        xs: Sequence[float],
        ys: Sequence[float],
        *,
        xlabel: str = "",
        ylabel: str = "",
        log_x: bool = False,
        log_y: bool = False,
        w: int = 520,
        h: int = 280,
    ):
        self.w, self.h, self.log_x, self.log_y = w, h, log_x, log_y
        self.l, self.r, self.t, self.b = 56, 16, 44, 56
        self.parts: list[str] = []
        xs = [self._tx(x) for x in xs] or [0.0, 1.0]
        ys = [self._ty(y) for y in ys] or [0.0, 1.0]
        self.x0, self.x1 = min(xs), max(xs)
        self.y0, self.y1 = min(ys), max(ys)
        if self.x1 - self.x0 < 1e-12:
            self.x0, self.x1 = self.x0 - 0.5, self.x1 + 0.5
        if log_y:
            pad = (self.y1 - self.y0) * 0.08 or 0.1
            self.y0, self.y1 = self.y0 - pad, self.y1 + pad
            self.yticks = [self.y0 + (self.y1 - self.y0) * i / 4 for i in range(5)]
        else:  # from 0 (or below) to the data's top, on round ticks: 0/1 values end at 1
            self.yticks = nice_ticks(min(self.y0, 0.0), self.y1)
            self.y0, self.y1 = self.yticks[0], self.yticks[-1]
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel

    def _tx(self, x: float) -> float:
        return math.log10(x) if self.log_x else x

    def _ty(self, y: float) -> float:
        return math.log10(y) if self.log_y else y

    def px(self, x: float) -> float:
        span = self.w - self.l - self.r
        return self.l + (self._tx(x) - self.x0) / (self.x1 - self.x0) * span

    def py(self, y: float) -> float:
        span = self.h - self.t - self.b
        return self.h - self.b - (self._ty(y) - self.y0) / (self.y1 - self.y0) * span

    def hline(self, y: float, label: str, color: str = GREY) -> None:
        if self.y0 <= self._ty(y) <= self.y1:
            yy = self.py(y)
            self.parts.append(
                f'<line x1="{self.l}" x2="{self.w - self.r}" y1="{yy:.1f}" y2="{yy:.1f}" '
                f'stroke="{color}" stroke-dasharray="4 3"/><text x="{self.w - self.r - 4}" '
                f'y="{yy - 3:.1f}" text-anchor="end" fill="{color}">{esc(label)}</text>'
            )

    def series(self, pts: Sequence[tuple[float, float]], color: str, label: str, *, step=False):
        pts = [(x, y) for x, y in pts if y is not None and (not self.log_y or y > 0)]
        if not pts:
            return
        coords = []
        for i, (x, y) in enumerate(pts):
            if step and i:
                coords.append(f"{self.px(x):.1f},{self.py(pts[i - 1][1]):.1f}")
            coords.append(f"{self.px(x):.1f},{self.py(y):.1f}")
        dash = ' stroke-dasharray="6 3"' if step else ""
        self.parts.append(
            f'<polyline data-mark="line" fill="none" stroke="{color}" stroke-width="2"{dash} '
            f'points="{" ".join(coords)}"><title>{esc(label)}</title></polyline>'
        )
        if not step:
            for x, y in pts:
                self.parts.append(
                    f'<circle data-mark="point" cx="{self.px(x):.1f}" cy="{self.py(y):.1f}" r="3.5" '
                    f'fill="{color}"><title>{esc(label)}: {x:g}, {y:.3g}</title></circle>'
                )

    def bars(self, labels: Sequence[str], values: Sequence[float | None], colors: Sequence[str]):
        n = max(len(labels), 1)
        slot = (self.w - self.l - self.r) / n
        # bars grow from 0, or on a log scale from 1x (up: faster, down: slower)
        base = self.py(1.0 if self.log_y and self.y0 < 0 < self.y1 else 10**self.y0)
        if not self.log_y:
            base = self.py(0.0)
        for i, (lab, v, c) in enumerate(zip(labels, values, colors, strict=True)):
            x = self.l + i * slot + slot * 0.15
            if v is None or (self.log_y and v <= 0):
                self.parts.append(
                    f'<text x="{x + slot * 0.35:.1f}" y="{base - 4:.1f}" text-anchor="middle" '
                    f'fill="{GREY}">-</text>'
                )
            else:
                y = self.py(v)
                top, height = min(y, base), abs(base - y)
                self.parts.append(
                    f'<rect data-mark="bar" x="{x:.1f}" y="{top:.1f}" width="{slot * 0.7:.1f}" '
                    f'height="{max(height, 1):.1f}" fill="{c}"><title>{esc(lab)}: {v:.3g}</title>'
                    "</rect>"
                )
            if n <= 24:
                lx, ly = x + slot * 0.35, self.h - self.b + 12
                self.parts.append(
                    f'<text x="{lx:.1f}" y="{ly}" text-anchor="end" '
                    f'transform="rotate(-30 {lx:.1f} {ly})">{esc(str(lab)[:14])}</text>'
                )

    def legend(self, items: Sequence[tuple[str, str]]) -> None:
        x = self.l + 6
        for label, color in items:
            self.parts.append(
                f'<rect x="{x}" y="{self.t - 20}" width="10" height="10" fill="{color}"/>'
                f'<text x="{x + 14}" y="{self.t - 11}">{esc(label)}</text>'
            )
            x += 18 + 7 * len(label)

    def svg(self) -> str:
        ax = [
            f'<text x="{self.w / 2:.0f}" y="16" text-anchor="middle" font-weight="600">'
            f"{esc(self.title)}</text>",
            f'<line x1="{self.l}" y1="{self.h - self.b}" x2="{self.w - self.r}" '
            f'y2="{self.h - self.b}" stroke="#444"/>',
            f'<line x1="{self.l}" y1="{self.t}" x2="{self.l}" y2="{self.h - self.b}" stroke="#444"/>',
            f'<text x="{self.w / 2:.0f}" y="{self.h - 6}" text-anchor="middle">'
            f"{esc(self.xlabel)}</text>",
            f'<text transform="translate(14,{self.h / 2:.0f}) rotate(-90)" '
            f'text-anchor="middle">{esc(self.ylabel)}</text>',
        ]
        for v in self.yticks:
            label = f"{10**v:.3g}" if self.log_y else f"{v:.3g}"
            yy = self.h - self.b - (self.h - self.t - self.b) * (v - self.y0) / (self.y1 - self.y0)
            ax.append(
                f'<text x="{self.l - 4}" y="{yy + 4:.1f}" text-anchor="end">{label}</text>'
                f'<line x1="{self.l - 3}" x2="{self.l}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#444"/>'
            )
        return (
            f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{self.w}" '
            f'height="{self.h}" viewBox="0 0 {self.w} {self.h}" role="img" '
            f'aria-label="{esc(self.title)}">' + "".join(ax + self.parts) + "</svg>"
        )

    def xticks(self, values: Sequence[float]) -> None:
        for v in values:
            self.parts.append(
                f'<text x="{self.px(v):.1f}" y="{self.h - self.b + 14}" text-anchor="middle">'
                f"{v:g}</text>"
            )


# ---------------------------------------------------------------------------------------------
# Run report


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
                td(_pct(k.get("share")), num=k.get("share")),
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
            f"speedup {_x(kb.get('speedup'))}</p>"
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
                td(_x(sp.get("eager")), num=sp.get("eager") or 0),
                td(_x(sp.get("compile")), num=sp.get("compile") or 0),
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


# ---------------------------------------------------------------------------------------------
# Bench report


def _per_problem(settings: dict[str, Any]) -> Any:
    """Candidates drawn per problem: `per_problem` (1 when the compiler alone drafts), not the
    `--samples` asked for; bench reports written before it was recorded have `samples` only."""
    return settings.get("per_problem") or settings.get("samples")


def render_bench(report: dict[str, Any]) -> str:
    from agent.bench import headline as hl  # (the bench's modules load when a bench is shown)

    s, m = report.get("settings") or {}, report.get("metrics") or {}
    mode = s.get("mode", "sample")
    label = "success@k" if mode == "loop" else "pass@k"
    title = f"triton-agent bench ({mode}, {s.get('backend')}): {s.get('problems_path', '')}"
    body = [f"<h1>{esc(title)}</h1>"]
    body.append(
        f"<p><b>Status:</b> {esc(report.get('status'))}. Device: {esc(report.get('device'))}. "
        f"Protocol: {esc(s.get('protocol'))}; {esc(_per_problem(s))} candidate(s) per problem; "
        f"temperature {esc(s.get('temperature'))}, top_p {esc(s.get('top_p'))}; "
        f"{esc(s.get('trials'))} trials, tolerance {esc(s.get('tolerance_preset'))}.</p>"
    )
    charts = []
    pk = m.get("pass_at_k") or {}
    c = Chart(label, [0, 1], [0, 1], ylabel=label, w=360)
    c.bars([f"@{k}" for k in pk], list(pk.values()), [BLUE] * len(pk))
    charts.append(c.svg())
    fast = m.get("fast_p") or {}
    if len(fast) > 1:  # on a CPU only fast_0, the correctness rate, is known
        ps = [float(p) for p in fast]
        c = Chart("fast_p: correct and faster than p", ps, [0, 1], xlabel="p", ylabel="fraction")
        c.series(list(zip(ps, fast.values(), strict=True)), BLUE, "over eager")
        fc = m.get("fast_p_compile") or {}
        if fc:
            c.series(
                [(float(p), v) for p, v in fc.items() if v is not None], ORANGE, "over compile"
            )
        c.xticks(ps)
        c.legend([("over eager", BLUE)] + ([("over torch.compile", ORANGE)] if fc else []))
        charts.append(c.svg())
    problems = report.get("problems") or []
    sp = {
        base: [((p.get("best_speedup") or {}).get(base)) for p in problems]
        for base in ("eager", "compile")
    }
    if any(v for vals in sp.values() for v in vals if v):
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
        charts.append(c.svg())
    else:
        c = Chart("candidates correct per problem", [0, 1], [0, 1], ylabel="fraction")
        c.bars(
            [p["problem"] for p in problems],
            [(p["correct"] / p["n"]) if p.get("n") else None for p in problems],
            [GREEN if p.get("correct") else RED for p in problems],
        )
        charts.append(c.svg())
    body.append('<h2>Metrics</h2><div class="charts">' + "".join(charts) + "</div>")
    top = hl.table_rows(m.get("headline"))  # the geomean, median, trimmed, capped, >= 1x
    if top:
        body.append("<h2>Headline</h2>" + table(hl.HEADERS, [[td(c) for c in r] for r in top]))
        body.append(f'<p class="note">{esc((m.get("headline") or {}).get("definition"))}</p>')
    body.append("<h2>Problems</h2>")
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
                td(_pct(p1), num=p1 if p1 is not None else -1),
                td(_x(b.get("eager")), num=b.get("eager") or 0),
                td(_x(b.get("compile")), num=b.get("compile") or 0),
                td(_x(b.get("best")), num=b.get("best") or 0),
                td(_x(b.get(CB)), num=b.get(CB) or 0),  # beside the bar
                td(st or (p.get("error") or "-")),
                td(cell(p.get("arithmetic"), s.get("precision"))),
            ]
        )
    one = "success@1" if mode == "loop" else "pass@1"
    heads = ["problem", "n", "correct", one, "best vs eager", "best vs compile", "best vs better"]
    heads += ["vs eager cudnn.benchmark", "statuses", "arithmetic"]
    body.append(table(heads, rows, sortable=True))
    for n in report.get("notes") or []:
        body.append(f'<p class="note">Note: {esc(n)}</p>')
    return page(title, "\n".join(body))


CB = "eager_cudnn_benchmark"
"""Eager timed with cudnn.benchmark (`tools.baselines.CUDNN_BENCHMARK`): a column beside the bar."""


def write_bench_html(out_dir: str | Path, report: dict[str, Any]) -> Path:
    path = Path(out_dir) / "report.html"
    write_atomic(path, render_bench(report))
    return path
