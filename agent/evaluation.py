"""Turn a drafted candidate into an evaluated attempt through `tools.evaluate` (the one
evaluation path), and the rule that decides whether an attempt replaces the best."""

from __future__ import annotations

import multiprocessing
import os
import signal

import tools.evaluate
from agent.context import RunContext
from agent.state import Attempt, Candidate
from tools.problem import Problem
from tools.roofline import NOISE_FLOOR

KEEP_MARGIN = NOISE_FLOOR
"""A correct attempt replaces the best only when it is faster by more than this fraction, the
timer's noise floor. On the H200 the tuner's variants of 5 us kernels differed from their seed
by 0.6-2.2%, which is not a result."""


def no_code_message(candidate: Candidate) -> str | None:
    """Why a candidate has no code: the compiler drafter's own first line, else the default
    (a reply without `ModelNew`)."""
    if candidate["source"] != "compiler":
        return None
    response = (candidate.get("response") or "").strip()
    return response.splitlines()[0] if response else "the compiler drafter failed"


def evaluate_candidate(
    ctx: RunContext, problem: Problem, candidate: Candidate, *, index: int, round_: int
) -> Attempt:
    ev = tools.evaluate.evaluate(
        problem,
        candidate["code"],
        verifier=ctx.verifier,
        kernel_path=f"attempt_{index:02d}.py",
        baseline=ctx.config.baseline,
        no_code_message=no_code_message(candidate),
        on_warning=lambda message: ctx.emit("warning", message=message),
    )
    return Attempt(
        index=index,
        round=round_,
        source=candidate["source"],
        code=candidate["code"],
        status=ev.status,
        correct=ev.correct,
        speedup=ev.speedup,
        speedups=ev.speedups,
        verdict=ev.verdict.to_dict(),
        profile=ev.profile if ev.correct else None,
        feedback=ev.feedback,
        summary=ev.summary,
    )


def kill_jobs() -> None:
    """Kill the sandbox jobs this process started (Ctrl-C: stop now, not when they end). Each
    job leads its own session, so its process group goes too (whatever the candidate spawned)."""
    for proc in multiprocessing.active_children():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()  # not yet its own group leader


def improves(a: Attempt, best: Attempt | None) -> bool:
    """Whether correct attempt `a` should replace `best` (the loop's and the tuner's rule)."""
    if best is None:
        return True
    if a["speedup"] is None:
        return False
    if best["speedup"] is None:
        return True
    return a["speedup"] > best["speedup"] * (1.0 + KEEP_MARGIN)
