"""Ctrl-C at any moment of the loop (issue 17): in a node, between two nodes, in a router, while
LangGraph records a node's writes or its checkpoint. Whatever the moment, the run stops with
KeyboardInterrupt, every attempt it printed is checkpointed, and `--resume` (here
`run(resume=...)`) does the rest of the budget; only a run that had ended says it had.

The interrupt is a real SIGINT to this process, raised when the main thread reaches a chosen
point (a `sys.settrace` hook), so each case is deterministic and takes a fraction of a second:
candidates are "evaluated" by a scripted stand-in, with no sandbox job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import agent.interrupt
import agent.nodes
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.helpers import EX, fenced
from tools.orchestrate.evaluate import no_code_verdict

RELU = str(EX / "problems" / "relu.py")
CODES = ["# kernel zero\n" + (EX / "kernels" / "relu.py").read_text(), "# kernel one\n"]
"""What the two scripted replies hold; each attempt must carry the reply of its own number."""

NODES = {name: inspect.unwrap(getattr(agent.nodes, name)).__code__ for name in ("draft", "finish")}

Fire = Callable[[FrameType, str], bool]


def scripted_evaluation(ctx, problem, cand, *, index, round_):
    """A wrong kernel, at once: the loop goes on until the budget (2) is spent."""
    verdict = no_code_verdict("scripted")
    return {
        "index": index, "round": round_, "source": cand["source"], "code": cand["code"],
        "status": verdict.status, "correct": False, "speedup": None, "speedups": {},
        "verdict": verdict.to_dict(), "profile": None, "feedback": "", "summary": "scripted",
    }  # fmt: skip


@pytest.fixture
def loop(tmp_path, monkeypatch):
    """A budget-2 loop (one candidate a round) with scripted evaluations; SIGINT with Python's
    own action, whatever this test run inherited (a suite started in the background has it
    ignored)."""
    monkeypatch.setattr(agent.nodes, "evaluate_candidate", scripted_evaluation)
    monkeypatch.setattr(agent.nodes, "kill_jobs", lambda: None)  # no job runs here
    monkeypatch.setattr(agent.interrupt, "kill_jobs", lambda: None)
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield AgentConfig(
        budget=2, samples_per_round=1, compiler_seed=False, trials=1, aot_target=None,
        runs_dir=str(tmp_path), run_id="r", backend="replay",
    )  # fmt: skip
    signal.signal(signal.SIGINT, previous)
    agent.interrupt.STOPPING.clear()


@contextlib.contextmanager
def sigint_when(fire: Fire) -> Iterator[list[str]]:
    """Trace the main thread; send SIGINT to this process at the first event (`call`, `line`,
    `return`) that `fire(frame, event)` accepts. Yields the list that names where it fired."""
    fired: list[str] = []

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if fired:
            return None
        if fire(frame, event):
            fired.append(
                f"{event} {frame.f_code.co_name} {frame.f_code.co_filename}:{frame.f_lineno}"
            )
            sys.settrace(None)
            signal.raise_signal(signal.SIGINT)
            return None
        return trace

    sys.settrace(trace)
    try:
        yield fired
    finally:
        sys.settrace(None)


def nth(code: Any, event: str, n: int) -> Callable[[FrameType, str], bool]:
    """True at the `n`-th `event` ("call" or "return") of the function with code `code`."""
    seen = [0]

    def at(frame: FrameType, ev: str) -> bool:
        if ev == event and frame.f_code is code:
            seen[0] += 1
        return seen[0] >= n

    return at


def then(first: Callable[[FrameType, str], bool], second: Fire) -> Fire:
    """Fire at the first event `second` accepts once `first` has been true."""
    armed = [False]

    def fire(frame: FrameType, event: str) -> bool:
        if not armed[0]:
            armed[0] = first(frame, event)
            return False
        return second(frame, event)

    return fire


def lines_after(start: Callable[[FrameType, str], bool], count: int) -> Fire:
    """Fire at the `count`-th line the main thread runs once `start` has been true."""
    seen = [0]

    def line(frame: FrameType, event: str) -> bool:
        seen[0] += event == "line"
        return seen[0] >= count

    return then(start, line)


def interrupt_then_resume(
    cfg: AgentConfig, fire: Fire | None
) -> tuple[list[dict], list[dict], dict]:
    """Run until the SIGINT that `fire` places (or the run sends itself), then resume; the
    events of each run, and the result."""
    first: list[dict] = []
    with sigint_when(fire or (lambda f, e: False)) as fired, pytest.raises(KeyboardInterrupt):
        run(RELU, cfg, backend=ReplayBackend([fenced(c) for c in CODES]), on_event=first.append)
    assert fired or fire is None, "the run ended before the point to interrupt"
    agent.interrupt.STOPPING.clear()  # as the next command does (`jobs_stop_on_sigint`)
    second: list[dict] = []
    result = run(
        None, cfg, resume="r", backend=ReplayBackend([fenced(c) for c in CODES]),
        on_event=second.append,
    )  # fmt: skip
    return first, second, result


def check_resumed(cfg: AgentConfig, first: list[dict], second: list[dict], result: dict) -> None:
    """Nothing lost, nothing done twice, and "finished" only for a run that had finished."""
    printed = [e["attempt"]["index"] for e in first if e["event"] == "attempt"]
    redone = [e["attempt"]["index"] for e in second if e["event"] == "attempt"]
    assert sorted(printed + redone) == [0, 1], (printed, redone)  # printed = checkpointed
    [resumed] = [e for e in second if e["event"] == "resume"]
    if resumed.get("finished"):
        assert any(e["event"] == "finish" for e in first), resumed
    assert resumed["attempts"] == len(printed)
    assert [a["index"] for a in result["attempts"]] == [0, 1]
    assert result["budget"]["left"] == 0 and result["stop_reason"] == "budget spent"
    attempts = Path(cfg.runs_dir, "r", "attempts")
    assert sorted(int(p.name) for p in attempts.iterdir()) == [0, 1]
    for i, code in enumerate(CODES):  # no reply skipped or used twice
        assert (attempts / f"{i:02d}" / "response.txt").read_text() == fenced(code)


def _hosts_own_handler(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # like Python's, but not Python's: the loop leaves it alone


@pytest.mark.parametrize("handler", ["python", "host"])
def test_ctrl_c_as_the_round_2_draft_is_being_checkpointed_does_not_end_the_run(loop, handler):
    """The flake seen in test_interrupt.py: SIGINT just after "round 2: drafting" landed after
    LangGraph had saved the draft node's writes and before it saved the checkpoint after it;
    LangGraph reports such a thread as having nothing left to run, so `--resume` said "run
    already finished (1 attempts)" with half the budget left. Under Python's SIGINT handling
    (or the CLI's) the interrupt now waits for the checkpoint; under a host application's own
    handler, which the loop does not replace, it still lands there, and resuming goes on."""
    if handler == "host":
        signal.signal(signal.SIGINT, _hosts_own_handler)
    after_draft = then(
        nth(NODES["draft"], "return", 2), lambda f, e: f.f_code.co_name == "after_tick"
    )
    first, second, result = interrupt_then_resume(loop, after_draft)
    assert not any(e["event"] == "finish" for e in first)
    [resumed] = [e for e in second if e["event"] == "resume"]
    assert not resumed.get("finished") and resumed["attempts"] == 1, resumed
    check_resumed(loop, first, second, result)


def test_ctrl_c_as_a_candidate_is_killed_spends_no_budget(loop, monkeypatch):
    """A candidate whose job Ctrl-C killed has no verdict: it stays pending (same number) and
    spends no budget, however fast its evaluation returns after the kill."""
    stopped = threading.Event()

    def killed_on_ctrl_c(ctx, problem, cand, *, index, round_):
        if index == 1 and not stopped.is_set():
            stopped.set()
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # it waits on us
            agent.interrupt.STOPPING.wait(5)  # as a killed job's verification returns
            return {**scripted_evaluation(ctx, problem, cand, index=index, round_=round_),
                    "status": "crash", "summary": "killed"}  # fmt: skip
        return scripted_evaluation(ctx, problem, cand, index=index, round_=round_)

    monkeypatch.setattr(agent.nodes, "evaluate_candidate", killed_on_ctrl_c)
    signal.signal(signal.SIGINT, agent.interrupt._on_sigint)  # the CLI's: it sets STOPPING
    first, second, result = interrupt_then_resume(loop, None)
    check_resumed(loop, first, second, result)
    assert all(a["status"] != "crash" for a in result["attempts"])


_SPAN: dict[str, int] = {}


def _calibrate(cfg: AgentConfig) -> int:
    """How many lines the main thread runs from the first draft to the end of `finish` (the
    fewest of two runs after a first one that imports what the loop imports lazily)."""
    if "lines" not in _SPAN:
        counts = []
        for i in range(3):
            count = {"lines": 0, "on": False}

            def trace(frame: FrameType, event: str, arg: Any, count=count) -> Any:
                if event == "call" and frame.f_code is NODES["draft"]:
                    count["on"] = True
                count["lines"] += count["on"] and event == "line"
                if event == "return" and frame.f_code is NODES["finish"]:
                    count["on"] = False
                return trace

            sys.settrace(trace)
            try:
                run(
                    RELU, dataclasses.replace(cfg, run_id=f"calibrate{i}"),
                    backend=ReplayBackend([fenced(c) for c in CODES]),
                )  # fmt: skip
            finally:
                sys.settrace(None)
            counts.append(count["lines"])
        _SPAN["lines"] = min(counts[1:])
    return _SPAN["lines"]


POINTS = 16


@pytest.mark.parametrize("point", range(POINTS))
def test_ctrl_c_anywhere_in_the_loop_leaves_a_resumable_run(loop, point, tmp_path):
    """SIGINT at POINTS evenly spaced lines of the main thread, from the first draft to the end
    of the run: in nodes, routers, LangGraph's bookkeeping between nodes and its checkpoints.
    (A run shorter than the calibration is interrupted as `finish` returns.)"""
    span = _calibrate(dataclasses.replace(loop, runs_dir=str(tmp_path / "calibrate")))
    at = 1 + span * point // POINTS + span // (2 * POINTS)
    line = lines_after(nth(NODES["draft"], "call", 1), at)
    first, second, result = interrupt_then_resume(
        loop, lambda f, e: line(f, e) or (e == "return" and f.f_code is NODES["finish"])
    )
    check_resumed(loop, first, second, result)
