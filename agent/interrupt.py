"""Ctrl-C (SIGINT) stops a command within seconds, and never records a verdict of a job it killed.

Python raises KeyboardInterrupt in the main thread only, and only between bytecodes: a command
waiting on a sandbox job (a verification's `finally` waits for its jobs to end, up to their
timeout) went on waiting, 112 s for an infinite loop under `verify --timeout 120`. Under
`jobs_stop_on_sigint()` the signal first marks the process as stopping (`STOPPING`), then kills
every sandbox job it started, then raises KeyboardInterrupt: what waited on a job returns at
once, and a verdict computed from a killed job is dropped (the evaluate node checks `STOPPING`
before it records an attempt). What had finished is checkpointed by the loop (`agent.runner`).

`bench` does not use it: its SIGINT lets the running candidates finish for a grace period.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

from agent.evaluation import kill_jobs

STOPPING = threading.Event()
"""Set from SIGINT until the next command starts: results of jobs still arriving are not verdicts."""


def stop_jobs() -> None:
    """Mark the process as stopping, then kill the sandbox jobs it started (in that order: a
    worker thread that sees its job die must already know why)."""
    STOPPING.set()
    kill_jobs()


REPEAT_GRACE_S = 5.0
"""A second SIGINT this soon after the first is ignored: the first is unwinding, checkpointing
the attempts that had finished (a KeyboardInterrupt in the middle of that write would lose them).
Later ones interrupt again."""

_last = {"at": float("-inf")}


def _on_sigint(signum: int, frame: object) -> None:
    now = time.monotonic()
    if STOPPING.is_set() and now - _last["at"] < REPEAT_GRACE_S:
        return
    _last["at"] = now
    stop_jobs()
    raise KeyboardInterrupt


@contextlib.contextmanager
def jobs_stop_on_sigint() -> Iterator[None]:
    """Within: SIGINT kills the sandbox jobs, then raises KeyboardInterrupt (main thread only;
    elsewhere, and where SIGINT is ignored, nothing changes)."""
    STOPPING.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # started in the background with SIGINT ignored: keep it so
        yield
        return
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
