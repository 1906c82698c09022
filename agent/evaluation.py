"""The one evaluation path of agent/: the verifier every command and the API build
(`make_verifier`), a candidate verified (`verify_candidate`: `tools.orchestrate.evaluate`), profiled
(`profile_candidate`) or turned into an evaluated attempt of the loop (`evaluate_candidate`:
`tools.orchestrate.evaluate`), and the rule that decides whether an attempt replaces the best."""

from __future__ import annotations

import multiprocessing
import os
import signal
from typing import TYPE_CHECKING, Any

import tools.orchestrate.evaluate
from agent.context import RunContext
from agent.state import Attempt, Candidate
from tools.checks.roofline import NOISE_FLOOR
from tools.core.problem import Problem
from tools.core.results import Verdict
from tools.orchestrate.verify import Verifier, VerifyOptions

if TYPE_CHECKING:
    from tools.orchestrate.profile_result import ProfileOptions, ProfileResult

KEEP_MARGIN = NOISE_FLOOR
"""A correct attempt replaces the best only when it is faster by more than this fraction, the
timer's noise floor. On the H200 the tuner's variants of 5 us kernels differed from their seed
by 0.6-2.2%, which is not a result."""


def make_verifier(options: VerifyOptions, *, one_job: bool = False) -> Verifier:
    """The verifier for `options` (its device, sandbox slots, limits): the one place agent/
    builds a `tools.orchestrate.verify.Verifier` (`tests/test_one_evaluation_path.py` keeps it so). Share
    one across candidates and problems: it keeps their worker slots and checked problems.
    `one_job`: at most one job at a time on the CPU (a Ray task holds one core); on CUDA the
    slots are still every GPU the process sees times `jobs_per_gpu`."""
    return _OneJobVerifier(options) if one_job else Verifier(options)


class _OneJobVerifier(Verifier):
    """A Verifier whose sandbox runs one job at a time on the CPU; it makes its sandbox and
    limits from the options itself, through `Verifier.sandbox_factory` (a test's seam)."""

    @staticmethod
    def sandbox_factory(**kw: Any) -> Any:  # type: ignore[override]
        return Verifier.sandbox_factory(max_workers=1, **kw)


def verify_candidate(
    verifier: Verifier, problem: Problem, source: str, kernel_path: str = "candidate.py"
) -> Verdict:
    """The verdict of one candidate (`verify`, the API, the MCP tool): `tools.orchestrate.evaluate`'s,
    without timing."""
    return tools.orchestrate.evaluate.evaluate(
        problem, source, verifier=verifier, kernel_path=kernel_path, measure=False
    ).verdict


def profile_candidate(
    verifier: Verifier,
    problem: Problem,
    source: str,
    kernel_path: str = "candidate.py",
    options: ProfileOptions | None = None,
) -> ProfileResult:
    """Verify, then time one candidate (`profile`, the API, the MCP tool): `tools.orchestrate.profile`, the
    timing `tools.orchestrate.evaluate` runs on a GPU, whose whole result (the table, the trace, status
    `unavailable` without a GPU) these callers show."""
    from tools.orchestrate.profile import profile

    return profile(problem, source, verifier=verifier, kernel_path=kernel_path, options=options)


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
    ev = tools.orchestrate.evaluate.evaluate(
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
