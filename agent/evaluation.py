"""Turn a drafted candidate into an evaluated attempt: verify (always), then profile (GPU only,
correct kernels only)."""

from __future__ import annotations

from typing import Any

from agent.context import RunContext
from agent.state import Attempt, Candidate
from tools.problem import Problem
from tools.results import Evidence, SourceError, Verdict


def no_code_verdict(candidate: Candidate) -> Verdict:
    msg = (
        "the reply contained no Python code defining `class ModelNew`; answer with one complete "
        "Python file in a ```python code block"
    )
    if candidate["source"] == "compiler":
        msg = candidate["response"].strip().splitlines()[0] if candidate["response"] else "the compiler drafter failed"
    return Verdict(
        status="bad_input", compiled=False, correct=False, message=msg,
        evidence=Evidence(error=SourceError(kind="no_code", message=msg)),
    )


def evaluate_candidate(
    ctx: RunContext, problem: Problem, candidate: Candidate, *, index: int, round_: int
) -> Attempt:
    code = candidate["code"]
    if code is None:
        verdict = no_code_verdict(candidate)
    else:
        verdict = ctx.verifier.verify(problem, code, f"attempt_{index:02d}.py")
    profile: dict[str, Any] | None = None
    speedups: dict[str, float] = {}
    status = verdict.status
    feedback = verdict.feedback()
    if verdict.correct and ctx.device == "cuda":
        profile = _profile(ctx, problem, code)
        if profile:
            speedups = {k: v for k, v in (profile.get("speedups") or {}).items() if v}
            if profile.get("feedback"):
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


def _profile(ctx: RunContext, problem: Problem, code: str) -> dict[str, Any] | None:
    """Time a verified kernel (tools.profile); None when profiling is unavailable."""
    try:
        from tools import profile as prof
    except ImportError:
        return None
    try:
        result = prof.profile(problem, code, verifier=ctx.verifier, baseline=ctx.config.baseline
                              if ctx.config.baseline != "best" else "eager")
    except Exception as exc:  # a profiling failure must not lose a correct kernel
        ctx.emit("warning", message=f"profiling failed: {exc}")
        return None
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    try:
        data["feedback"] = result.feedback()
    except Exception:
        pass
    return data
