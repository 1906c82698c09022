"""The bench's headline (issue 35): the geometric mean of each problem's best correct speedup
says little alone (session 13's 1.11x had a median of 1.03x, its top speedups against cuDNN's
default algorithm choice), so beside it stand the median, a trimmed geometric mean, one with
every speedup capped, and the count at 1.0x or more; over the bar (the better of eager and
torch.compile), over eager with `cudnn.benchmark` (what a user tuning convolutions sets) and
over each baseline; for all problems and per KernelBench level. Pure: rows in, a dict out, and
its table for the markdown and HTML reports."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import Any

from agent.bench.metrics import geomean, percentile

TRIM_SHARE = 0.05
"""The trimmed geometric mean drops floor(5% of the problems) at each end (7 of 156 each)."""
CAP = 2.0
"""The capped geometric mean counts every speedup above 2x as 2x."""
BASES = ("best", "eager_cudnn_benchmark", "eager", "compile")
"""The headline's baselines, the bar first; `eager_cudnn_benchmark` beside it, never the bar."""
NAMES = {
    "best": "the better of eager and torch.compile (the bar)",
    "eager_cudnn_benchmark": "eager with cudnn.benchmark",
    "eager": "eager",
    "compile": "torch.compile",
}
DEFINITION = (
    "Each problem's best correct kernel's speedup (problems without a timed correct kernel "
    "are left out; problems counts the rest). median: the middle problem's (the mean of "
    f"the two middle ones). trimmed: the geometric mean with floor({TRIM_SHARE:.0%} of the "
    f"problems) dropped at each end. capped: the geometric mean with every speedup over "
    f"{CAP:g}x counted as {CAP:g}x. >= 1.0x: problems whose kernel is at least as fast. "
    "Eager with cudnn.benchmark: eager timed again with torch.backends.cudnn.benchmark = True "
    "(cuDNN times its algorithms for each shape); evidence beside the bar, not the bar."
)


def summary(values: Iterable[float | None]) -> dict[str, Any] | None:
    """The headline's figures over `values` (None, non-finite and non-positive left out);
    None where none is left."""
    vals = sorted(v for v in values if v is not None and math.isfinite(v) and v > 0)
    if not vals:
        return None
    n = len(vals)
    k = math.floor(TRIM_SHARE * n)
    return {
        "problems": n,
        "geomean": geomean(vals),
        "median": percentile(vals, 0.5),
        "trimmed_geomean": geomean(vals[k : n - k]),
        "trimmed_each_end": k,
        "capped_geomean": geomean(min(v, CAP) for v in vals),
        "at_least_1x": sum(v >= 1.0 for v in vals),
    }


_LEVEL = re.compile(r"level\d+")


def problem_level(name: str, problems_path: str | None = None) -> str | None:
    """A problem's KernelBench level: its name's first folder (`level2/14_...`), else the
    bench's problems folder (`.kb/kb/level1`), where either is spelled `levelN`."""
    parts = PurePath(name).parts
    if len(parts) > 1 and _LEVEL.fullmatch(parts[0]):
        return parts[0]
    folder = PurePath(problems_path or "").name
    return folder if _LEVEL.fullmatch(folder) else None


def headline(rows: Iterable[tuple[str | None, dict[str, Any]]]) -> dict[str, Any]:
    """The headline from (level or None, best speedup per baseline) per problem: `all` and each
    level found, each {baseline: `summary`} for the `BASES` with values."""
    rows = list(rows)
    sets: dict[str, list[dict[str, Any]]] = {"all": [b for _, b in rows]}
    for level in sorted({lv for lv, _ in rows if lv}):
        sets[level] = [b for lv, b in rows if lv == level]
    out: dict[str, Any] = {"trim_share": TRIM_SHARE, "cap": CAP, "definition": DEFINITION}
    out["sets"] = {
        name: {
            base: s
            for base in BASES
            if (s := summary((b or {}).get(base) for b in bests)) is not None
        }
        for name, bests in sets.items()
    }
    return out


HEADERS = ("set", "over", "problems", "geomean", "median", "trimmed geomean",
           f"geomean capped at {CAP:g}x", ">= 1.0x")  # fmt: skip


def table_rows(h: dict[str, Any] | None) -> list[list[str]]:
    """The headline as table cells (`HEADERS`), one row per set and baseline; where the
    problems are of one level, that level is shown once, as `all (levelN)`."""
    sets = (h or {}).get("sets") or {}
    names = [n for n in sets if n == "all" or len(sets) > 2]
    only = [n for n in sets if n != "all"] if len(sets) == 2 else []
    rows = []
    for name in names:
        for base, s in sets[name].items():
            rows.append(
                [
                    f"{name} ({only[0]})" if only else name,
                    NAMES.get(base, base),
                    str(s["problems"]),
                    _x(s["geomean"]),
                    _x(s["median"]),
                    f"{_x(s['trimmed_geomean'])} ({s['trimmed_each_end']} dropped each end)",
                    _x(s["capped_geomean"]),
                    f"{s['at_least_1x']} of {s['problems']}",
                ]
            )
    return rows


def markdown(h: dict[str, Any] | None) -> list[str]:
    """The headline's markdown lines (none where nothing was timed)."""
    rows = table_rows(h)
    if not rows:
        return []
    return [
        "## Headline",
        "",
        _md_row(HEADERS),
        "|" + "---|" * len(HEADERS),
        *(_md_row(r) for r in rows),
        "",
        (h or {}).get("definition", DEFINITION),
        "",
    ]


def console_line(h: dict[str, Any] | None) -> str | None:
    """One line for the console: the headline over the bar for all problems (None where
    nothing was timed), with the geomean over eager with cudnn.benchmark where it was timed."""
    sets = (h or {}).get("sets") or {}
    s = (sets.get("all") or {}).get("best")
    if not s:
        return None
    cb = (sets.get("all") or {}).get("eager_cudnn_benchmark")
    return (
        f"headline over the better of eager and torch.compile ({s['problems']} problems): "
        f"geomean {_x(s['geomean'])}, median {_x(s['median'])}, trimmed "
        f"{_x(s['trimmed_geomean'])}, capped at {CAP:g}x {_x(s['capped_geomean'])}, "
        f"{s['at_least_1x']} at >= 1.0x"
        + (f"; geomean over eager with cudnn.benchmark {_x(cb['geomean'])}" if cb else "")
    )


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"
