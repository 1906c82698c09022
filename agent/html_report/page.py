"""The page around a report: its CSS and script, escaping, tables and cells, status badges,
the number formats and colours the charts share."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

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


def fmt_x(v: Any) -> str:
    return f"{v:.2f}x" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def fmt_pct(v: Any) -> str:
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
