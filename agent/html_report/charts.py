"""SVG charts drawn here, so a report opens offline and in any browser: `Chart`, a plot area
with linear or log axes, series, bars, a legend; `nice_ticks` for round axis values."""

from __future__ import annotations

import math
from collections.abc import Sequence

from agent.html_report.page import GREY, esc


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
