"""Benchmark metrics, pure functions: pass@k, success@k, fast_p, geometric mean, percentiles,
the code versions of the records."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

log = logging.getLogger(__name__)

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
SPEEDUP_BASES = ("eager", "compile", "best")
"""Every report gives the speedup over each baseline and over the better (faster) of the two."""
BASE_NAMES = {"eager": "eager", "compile": "torch.compile", "best": "the better of the two"}
REPORTED = (*SPEEDUP_BASES, "eager_fp32", "eager_cudnn_benchmark")
"""Every speedup a problem's row gives (its best correct kernel's): over each baseline, the
better of the two (the bar), and beside the bar eager with TF32 off and with cudnn.benchmark."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), in the stable product form
    1 - prod_{i=n-c+1}^{n} (1 - k/i)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n (n={n}, c={c})")
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n (n={n}, k={k})")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def solved_within(order_correct: Sequence[bool], k: int, free: bool = False) -> bool:
    """Loop mode: a correct kernel among the first k drafted candidates (or a free one: the
    compiler seed)."""
    return free or any(order_correct[:k])


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def fast_p(best_speedups: Sequence[float | None], solved: Sequence[bool], p: float) -> float:
    """Fraction of problems with a correct candidate whose speedup is > p.

    `best_speedups[i]` is problem i's best speedup among its correct candidates (None: not
    timed); `solved[i]` whether it has a correct candidate at all. fast_0 is the correctness rate.
    """
    if not solved:
        return 0.0
    hits = 0
    for sp, ok in zip(best_speedups, solved, strict=True):
        if not ok:
            continue
        if p <= 0.0 or (sp is not None and sp > p):
            hits += 1
    return hits / len(solved)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation between order statistics (numpy's
    default); None for no values."""
    vals = sorted(values)
    if not vals:
        return None
    pos = q * (len(vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def code_versions(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Candidates per version of the code that evaluated them (`SampleRecord.code`; records
    written before it was kept count as "unknown"), most first."""
    count = Counter(s.get("code") or "unknown" for r in rows for s in r["samples"])
    return dict(count.most_common())


def one_code_version(versions: dict[str, int]) -> str | None:
    """The version when every candidate was evaluated by one known version (`code_versions`'
    count), else None."""
    return next(iter(versions)) if len(versions) == 1 and "unknown" not in versions else None
