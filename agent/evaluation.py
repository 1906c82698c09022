"""Turn a drafted candidate into an evaluated attempt: verify (always), then profile (GPU only,
correct kernels only)."""

from __future__ import annotations

from typing import Any

from agent.context import RunContext
from agent.state import Attempt, Candidate
from tools.problem import Problem
from tools.results import Evidence, SourceError, Verdict
from tools.roofline import NOISE_FLOOR

KEEP_MARGIN = NOISE_FLOOR
"""A correct attempt replaces the best only when it is faster by more than this fraction, the
timer's noise floor. On the H200 the tuner's variants of 5 us kernels differed from their seed
by 0.6-2.2%, which is not a result."""


def no_code_verdict(candidate: Candidate) -> Verdict:
    msg = (
        "the reply contained no Python code defining `class ModelNew`; answer with one complete "
        "Python file in a ```python code block"
    )
    if candidate["source"] == "compiler":
        msg = (
            candidate["response"].strip().splitlines()[0]
            if candidate["response"]
            else "the compiler drafter failed"
        )
    return Verdict(
        status="bad_input",
        compiled=False,
        correct=False,
        message=msg,
        evidence=Evidence(error=SourceError(kind="no_code", message=msg)),
    )


def evaluate_candidate(
    ctx: RunContext, problem: Problem, candidate: Candidate, *, index: int, round_: int
) -> Attempt:
    code = candidate["code"]
    profile: dict[str, Any] | None = None
    speedups: dict[str, float] = {}
    verdict: Verdict | None = None
    if code is None:
        verdict = no_code_verdict(candidate)
    elif ctx.device == "cuda":
        # tools.profile verifies first (never times an incorrect kernel): one verification.
        verdict, profile = _profile(ctx, problem, code, f"attempt_{index:02d}.py")
        if profile:
            speedups = {
                k: float(v["value"])
                for k, v in (
                    ("eager", profile.get("speedup_eager")),
                    ("compile", profile.get("speedup_compile")),
                )
                if isinstance(v, dict) and v.get("value")
            }
    if verdict is None:
        verdict = ctx.verifier.verify(problem, code, f"attempt_{index:02d}.py")
    status = verdict.status
    feedback = verdict.feedback()
    if profile and profile.get("feedback"):
        feedback = feedback + "\n" + profile["feedback"]
    speedup = _speedup_for(ctx.config.baseline, speedups)
    if verdict.correct and speedup is not None and speedup < 1.0:
        status = "slower"
    summary = _summary(status, verdict, speedups)
    return Attempt(
        index=index,
        round=round_,
        source=candidate["source"],
        code=code,
        status=status,
        correct=verdict.correct,
        speedup=speedup,
        speedups=speedups,
        verdict=verdict.to_dict(),
        profile=profile,
        feedback=feedback,
        summary=summary,
    )


def _speedup_for(baseline: str, speedups: dict[str, float]) -> float | None:
    if not speedups:
        return None
    if baseline == "best":
        vals = [v for k, v in speedups.items() if k in ("eager", "compile")]
        return min(vals) if vals else None
    return speedups.get(baseline)


def _summary(status: str, verdict: Verdict, speedups: dict[str, float]) -> str:
    if verdict.correct:
        if speedups:
            parts = ", ".join(f"{v:.2f}x over {k}" for k, v in speedups.items())
            return f"correct, {parts}"
        return "correct (not timed: no GPU)"
    first = verdict.message.strip().splitlines()[0] if verdict.message else status
    return f"{status}: {first[:200]}"


def _profile(
    ctx: RunContext, problem: Problem, code: str, path: str
) -> tuple[Verdict | None, dict[str, Any] | None]:
    """Verify and time a kernel on the GPU (tools.profile). (None, None) when profiling fails,
    so the caller verifies without timing: a profiling failure must not lose a correct kernel."""
    try:
        from tools import profile as prof

        result = prof.profile(
            problem,
            code,
            verifier=ctx.verifier,
            kernel_path=path,
            baseline="eager" if ctx.config.baseline == "best" else ctx.config.baseline,
        )
    except Exception as exc:
        ctx.emit("warning", message=f"profiling failed: {exc}")
        return None, None
    data = result.to_dict()
    try:
        data["feedback"] = result.feedback()
    except Exception:
        pass
    verdict = result.verdict if isinstance(result.verdict, Verdict) else None
    if verdict is None or not verdict.correct:
        return verdict, None
    return verdict, data


def improves(a: Attempt, best: Attempt | None) -> bool:
    """Whether correct attempt `a` should replace `best` (the loop's and the tuner's rule)."""
    if best is None:
        return True
    if a["speedup"] is None:
        return False
    if best["speedup"] is None:
        return True
    return a["speedup"] > best["speedup"] * (1.0 + KEEP_MARGIN)
