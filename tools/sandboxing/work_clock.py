"""A job's working time: `time.monotonic()` less the time its process was stopped.

A pausable job (a draft, `tools.sandboxing.slots.Pausable`) is stopped with SIGSTOP while a
timing job has its GPU alone; no clock inside the stopped process can see that (SIGSTOP cannot be
caught, and wall clocks run on). On the H200 (session 19, benchmarks/results/gpu/2026-12-02-s19)
a network's draft reported "GEMM tiles 219 s" and its 60 s clock for speed choices
(`tools.draft.choice_clock`) ran out after 5 of 17 GEMM sites, most of it spent stopped.

The parent writes the job's total stopped seconds to a small file (the ledger, named by
`LEDGER_ENV`) before each SIGCONT (`write_ledger`), so the job reads it as soon as it runs
again. `now()` is the clock a job's own budgets use: its draft-time choices, phase times and
draft limits. Outside a pausable job (no ledger) it is `time.monotonic()`.
"""

from __future__ import annotations

import os
import time

LEDGER_ENV = "TA_PAUSED_LEDGER"
"""The environment variable naming a pausable job's ledger (set by `tools.sandboxing.sandbox`)."""


def paused_s() -> float:
    """Seconds this process was stopped by its parent so far (0 without a ledger)."""
    path = os.environ.get(LEDGER_ENV)
    if not path:
        return 0.0
    try:
        with open(path, encoding="ascii") as f:
            return max(0.0, float(f.read().strip() or 0.0))
    except (OSError, ValueError):  # not written yet (never stopped), or being replaced
        return 0.0


def now() -> float:
    """`time.monotonic()` less the time this process was stopped: a job's working clock."""
    return time.monotonic() - paused_s()


def write_ledger(path: str, total_s: float) -> None:
    """Record `total_s` stopped seconds for the job whose ledger is `path` (atomically: the job
    reads either the old total or the new one)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="ascii") as f:
            f.write(f"{total_s:.6f}")
        os.replace(tmp, path)
    except OSError:  # the job's directory is gone (it ended): nothing to tell it
        try:
            os.unlink(tmp)
        except OSError:
            pass
