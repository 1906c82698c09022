"""Counts of a pairs file and their bar charts."""

from __future__ import annotations

import logging
import os
from collections import Counter
from typing import Any

from agent.dataset.records import (
    SCHEMA_VERSION,
    classify_op,
    ledger_path,
    normalize_code,
    read_jsonl,
    read_pairs,
)
from tools.core.errors import BadInputError

log = logging.getLogger(__name__)


# -- stats ---------------------------------------------------------------------------------------
def stats(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Counts of a pairs file: by source, op family, device, and (from the ledger, when there is
    one) every work item's outcome."""
    records = read_pairs(path)
    ledger = read_jsonl(ledger_path(path))
    by_status: Counter[str] = Counter()
    if ledger:
        last: dict[tuple[str, str], str] = {}
        for e in ledger:  # a retried item's last outcome counts
            last[e["item"], e.get("origin", "")] = e["status"]
        by_status.update(last.values())
    else:
        by_status.update(r.verdict for r in records)
    speedups = sorted(r.speedup for r in records if r.speedup is not None)
    return {
        "file": str(path),
        "records": len(records),
        "problems": len({normalize_code(r.python_code) for r in records}),
        "by_source": dict(Counter(r.source for r in records).most_common()),
        "by_op_family": {
            f: n for f, n in Counter(classify_op(r.python_code) for r in records).most_common()
        },
        "by_status": dict(by_status.most_common()),
        "status_from": "ledger" if ledger else "records",
        "by_device": dict(Counter(r.device for r in records).most_common()),
        "timed": len(speedups),
        "median_speedup": speedups[len(speedups) // 2] if speedups else None,
        "schema_version": SCHEMA_VERSION,
    }


def plot_stats(summary: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Bar charts of the counts (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as e:
        raise BadInputError("--plot needs matplotlib: pip install matplotlib") from e
    panels = [
        ("source", summary["by_source"]),
        ("op family", summary["by_op_family"]),
        (f"outcome ({summary['status_from']})", summary["by_status"]),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (title, counts) in zip(axes, panels, strict=True):
        labels = list(counts) or ["(none)"]
        ax.bar(range(len(labels)), [counts.get(k, 0) for k in labels], color="#4c72b0")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_title(title)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("pairs" if "outcome" not in title else "work items")
    fig.suptitle(f"{summary['file']}: {summary['records']} verified pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
