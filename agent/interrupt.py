"""Ctrl-C (SIGINT) stops a command within seconds, and never records a verdict of a job it killed.

Python raises KeyboardInterrupt in the main thread only, and only between bytecodes: a command
waiting on a sandbox job (a verification's `finally` waits for its jobs to end, up to their
timeout) went on waiting, 112 s for an infinite loop under `verify --timeout 120`. Under
`jobs_stop_on_sigint()` the signal first marks the process as stopping (`STOPPING`), then kills
every sandbox job it started, then raises KeyboardInterrupt: what waited on a job returns at
once, and a verdict computed from a killed job is dropped (the evaluate node checks `STOPPING`
before it records an attempt). What had finished is checkpointed by the loop (`agent.runner`).

While the loop runs, Ctrl-C is raised only inside a node (`sigint_held()` around the graph,
`interruptible` around each node's body). Between nodes LangGraph records a node's writes and
then its checkpoint; a KeyboardInterrupt between those two left the writes of a finished node
(draft) saved on the checkpoint before it, which LangGraph reports as a thread with nothing left
to run: a run with budget left read as finished. A Ctrl-C that arrives there is held and raised
as the next node starts (milliseconds later), or when the graph returns.

`bench` does not use it: its SIGINT lets the running candidates finish for a grace period.

Once a command has finished and said so, `ignore_sigint_while_exiting()`: the interpreter's
shutdown (seconds: torch's and the sandbox's teardown) restores SIGINT's default action midway,
and a Ctrl-C then killed a run that had succeeded with 130 and no word.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from agent.evaluation import kill_jobs

P = ParamSpec("P")
R = TypeVar("R")

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


class _Held:
    """Where the main thread is: `depth` > 0 between the loop's nodes (a Ctrl-C waits),
    `noted` when one came in while it did."""

    depth = 0
    noted = False


def _on_sigint(signum: int, frame: object) -> None:
    now = time.monotonic()
    if STOPPING.is_set() and now - _last["at"] < REPEAT_GRACE_S:
        return
    _last["at"] = now
    stop_jobs()
    _hold_or_raise(signum, frame)


def _hold_or_raise(signum: int, frame: object) -> None:
    """Ctrl-C's KeyboardInterrupt, held while the main thread is between the loop's nodes."""
    if _Held.depth:
        _Held.noted = True  # raised by the next node (`interruptible`) or by `sigint_held`
        return
    raise KeyboardInterrupt


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Within (the graph running): Ctrl-C is held outside the nodes and raised on leaving, if
    no node raised it first. Where SIGINT has Python's default action (a run through the API)
    a handler that holds it is installed for the while; one of the host's own, or an ignored
    SIGINT, stays as it is (and nothing is held)."""
    if not _main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    install = previous is signal.default_int_handler
    if install:
        signal.signal(signal.SIGINT, _hold_or_raise)
    _Held.depth += 1
    try:
        yield
    finally:
        _Held.depth -= 1
        noted = _Held.noted and not _Held.depth
        if not _Held.depth:
            _Held.noted = False  # leaving with an exception: a Ctrl-C already being raised
        if install:
            signal.signal(signal.SIGINT, previous)
    if noted:
        raise KeyboardInterrupt


def sigint_pending() -> bool:
    """Whether a Ctrl-C is being held (`sigint_held`): code that polls raises it when it can."""
    return _Held.noted


_NOT_RETURNED = object()


def interruptible(node: Callable[P, R]) -> Callable[P, R]:
    """A graph node in whose body Ctrl-C raises at once (`sigint_held` holds it elsewhere); one
    held since the last node raises as this one starts, and one that arrives as it returns is
    held in turn, so that its update is still recorded."""

    @functools.wraps(node)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not _main_thread():
            return node(*args, **kwargs)
        depth, _Held.depth = _Held.depth, 0
        update: Any = _NOT_RETURNED
        try:
            if _Held.noted:
                _Held.noted = False
                raise KeyboardInterrupt
            update = node(*args, **kwargs)
        except KeyboardInterrupt:
            if update is _NOT_RETURNED or not depth:
                raise
            _Held.noted = True
        finally:
            _Held.depth = depth
        return update

    return run


@contextlib.contextmanager
def jobs_stop_on_sigint() -> Iterator[None]:
    """Within: SIGINT kills the sandbox jobs, then raises KeyboardInterrupt (main thread only;
    elsewhere, and where SIGINT is ignored, nothing changes)."""
    STOPPING.clear()
    _Held.noted = False
    if not _main_thread():
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


def ignore_sigint_while_exiting() -> None:
    """Ignore Ctrl-C from now on: the command has finished and printed its outcome, what is left
    is the interpreter's shutdown. Python restores SIGINT's default action part way through it
    (a handler of its own is reset; an ignored signal stays ignored), and the teardown after that
    lasts seconds (measured: a SIGINT 1 s after `optimize` printed its table killed the
    process, exit -SIGINT, 130 in a shell, with nothing said). For the program's own process
    only (the CLI's entry points): a host that calls `main` keeps its SIGINT as it was."""
    if _main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
