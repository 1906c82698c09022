"""Evaluate a candidate: the one path from a candidate's code to a typed result.

Verify (always), then on a GPU time the correct kernel against eager and torch.compile
(`tools.orchestrate.profile`, which verifies first, so there is one verification). The result carries the
verdict, the speedups over each baseline and over the better of the two, the status (the
verdict's, or `slower` when a correct kernel does not beat the chosen bar) and the feedback text a
refinement prompt or a person reads. The loop, bench, dataset, repair and the MCP server all call
`evaluate`; tests replace it here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from tools.core.errors import TritonAgentError
from tools.core.problem import Problem
from tools.core.results import Evidence, SourceError, Verdict
from tools.orchestrate.profile_result import BASELINES, DEFAULT_BASELINE

log = logging.getLogger(__name__)

NO_CODE_MESSAGE = (
    "the reply contained no Python code defining `class ModelNew`; answer with one complete "
    "Python file in a ```python code block"
)


@dataclass(kw_only=True)
class Evaluation:
    """What one candidate came to. JSON-serialisable (`to_dict`)."""

    status: str
    """The verdict's status, or `slower` (correct, not faster than `baseline`)."""
    correct: bool
    compiled: bool
    verdict: Verdict
    baseline: str
    """The bar `speedup` is measured against: `eager`, `compile` or `best`."""
    speedups: dict[str, float] = field(default_factory=dict)
    """Over `eager`, `compile` and `best` (the better of the two), where timed (GPU, correct)."""
    speedup: float | None = None
    """Over `baseline`; None when not timed."""
    profile: dict[str, Any] | None = None
    """`tools.orchestrate.profile`'s result as a dict when a timing ran (`{"status": "error", ...}` when
    the profiler itself failed and the verdict came from a plain verification)."""
    summary: str = ""
    """One line: `correct, 1.20x over best (eager 1.31x, compile 1.20x)` or `mismatch: ...`."""
    feedback: str = ""
    """The verdict's evidence, and the profile's, as text for the next prompt."""
    duration_s: float = 0.0

    @property
    def timed(self) -> bool:
        return bool(self.speedups)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def no_code_verdict(message: str | None = None) -> Verdict:
    """The verdict of a candidate with no code (a reply without `ModelNew`, a failed draft)."""
    msg = message or NO_CODE_MESSAGE
    return Verdict(
        status="bad_input",
        compiled=False,
        correct=False,
        message=msg,
        evidence=Evidence(error=SourceError(kind="no_code", message=msg)),
    )


def evaluate(
    problem: Problem,
    code: str | None,
    *,
    verifier: Any,
    kernel_path: str = "candidate.py",
    baseline: str = DEFAULT_BASELINE,
    measure: bool = True,
    profile_options: Any = None,
    no_code_message: str | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Evaluation:
    """Verify `code` against `problem` and, on a GPU, time it.

    `verifier` (a `tools.orchestrate.verify.Verifier`) decides the device and runs the jobs. `code` None is
    a candidate that never had code (`no_code_message` says why); `measure=False` verifies
    without timing even on a GPU. A profiler failure does not
    lose a correct kernel: the candidate is verified without timing and `on_warning` is told.
    Raises TritonAgentError only when the problem itself cannot run."""
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; choose one of {', '.join(BASELINES)}")
    start = time.monotonic()
    profile: dict[str, Any] | None = None
    profile_text = ""
    if code is None:
        verdict = no_code_verdict(no_code_message)
    elif measure and verifier.device == "cuda":
        verdict, profile, profile_text = _verify_and_time(
            problem, code, verifier, kernel_path, baseline, profile_options, on_warning
        )
    else:
        verdict = verifier.verify(problem, code, kernel_path)
    speedups = speedups_of(profile) if verdict.correct and profile else {}
    speedup = speedups.get(baseline)
    status = verdict.status
    if verdict.correct and speedup is not None and speedup < 1.0:
        status = "slower"
    feedback = verdict.feedback()
    if profile_text and verdict.correct:
        feedback = feedback + "\n" + profile_text
    return Evaluation(
        status=status,
        correct=verdict.correct,
        compiled=verdict.compiled,
        verdict=verdict,
        baseline=baseline,
        speedups=speedups,
        speedup=speedup,
        profile=profile,
        summary=summarize(status, verdict, speedups, baseline),
        feedback=feedback,
        duration_s=round(time.monotonic() - start, 3),
    )


def _verify_and_time(
    problem: Problem,
    code: str,
    verifier: Any,
    kernel_path: str,
    baseline: str,
    options: Any,
    on_warning: Callable[[str], None] | None,
) -> tuple[Verdict, dict[str, Any] | None, str]:
    import dataclasses

    from tools.orchestrate import profile as prof

    opts = options if options is not None else prof.ProfileOptions(baseline=baseline)
    if opts.baseline != baseline:
        opts = dataclasses.replace(opts, baseline=baseline)
    try:
        result = prof.profile(
            problem, code, verifier=verifier, kernel_path=kernel_path, options=opts
        )
    except TritonAgentError:
        raise
    except Exception as exc:  # the profiler broke, not the kernel: verify without timing
        message = f"profiling {kernel_path} failed: {exc}"
        log.warning(message)
        if on_warning is not None:
            on_warning(message)
        verdict = verifier.verify(problem, code, kernel_path)
        return verdict, {"status": "error", "message": str(exc)}, ""
    verdict = result.verdict
    if verdict is None:  # the profiler stopped before verifying
        verdict = verifier.verify(problem, code, kernel_path)
    try:
        text = result.feedback()
    except Exception:  # feedback is text for a prompt: never worth losing the verdict over
        log.debug("profile feedback failed", exc_info=True)
        text = ""
    return verdict, result.to_dict(), text


def speedups_of(profile: dict[str, Any]) -> dict[str, float]:
    """{"eager": x, "compile": y, "best": min(x, y)} from a profile result dict, for the
    baselines that were timed (and `eager_kernelbench` where KernelBench's method also ran,
    `eager_fp32` where eager was also timed with TF32 off, `eager_cudnn_benchmark` where it was
    also timed with `cudnn.benchmark` on)."""
    out: dict[str, float] = {}
    for name in ("eager", "compile"):
        s = profile.get(f"speedup_{name}")
        val = s.get("value") if isinstance(s, dict) else s
        if isinstance(val, (int, float)) and not isinstance(val, bool) and val > 0:
            out[name] = float(val)
    if out:
        out["best"] = min(out.values())
    s = profile.get("speedup_eager_fp32")
    val = s.get("value") if isinstance(s, dict) else s
    if isinstance(val, (int, float)) and not isinstance(val, bool) and val > 0:
        out["eager_fp32"] = float(val)  # eager with TF32 off: evidence, not the bar
    s = profile.get("speedup_eager_cudnn_benchmark")
    val = s.get("value") if isinstance(s, dict) else s
    if isinstance(val, (int, float)) and not isinstance(val, bool) and val > 0:
        out["eager_cudnn_benchmark"] = float(val)  # eager with cudnn.benchmark: beside the bar
    kb = profile.get("kernelbench")
    kb = kb.get("speedup") if isinstance(kb, dict) else None
    if isinstance(kb, (int, float)) and not isinstance(kb, bool) and kb > 0:
        out["eager_kernelbench"] = float(kb)  # KernelBench's own timing method, beside ours
    return out


def summarize(status: str, verdict: Verdict, speedups: dict[str, float], baseline: str) -> str:
    """One line for a console, a table or a prompt's history."""
    if verdict.correct:
        if not speedups:
            return "correct (not timed: no GPU)"
        bar = speedups.get(baseline)
        each = ", ".join(f"{k} {speedups[k]:.2f}x" for k in ("eager", "compile") if k in speedups)
        if bar is None:
            return f"correct ({each})"
        name = "the better of eager and compile" if baseline == "best" else baseline
        return f"correct, {bar:.2f}x over {name} ({each})"
    first = verdict.message.strip().splitlines()[0] if verdict.message else status
    return f"{status}: {first[:200]}"
