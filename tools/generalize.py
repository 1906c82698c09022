"""The generalisation check over sizes: which of a problem's size constants to change and to
what (`generalization_plan`), and the check itself (`generalize`): verify again at other sizes,
then say which sizes the candidate depends on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools.errors import ProblemError
from tools.problem import Problem
from tools.results import Verdict


@dataclass
class GeneralizationPlan:
    """The sizes a generalisation check tries, and what it leaves alone and why."""

    sizes: dict[str, Any]
    """Every constant varied: shapes of `get_inputs`, constructor sizes, float settings."""
    input_sizes: dict[str, Any]
    """Only the shapes of `get_inputs` (the fallback when the problem rejects `sizes`)."""
    kept: str
    """The constants not varied, with the reason (for the verdict's notes)."""


def generalization_plan(problem: Problem) -> GeneralizationPlan:
    """Other values for a problem's size constants (KernelBench's `batch_size = 16` included).

    Integers become about half plus one (so powers of two become odd and every size changes):
    those that shape `get_inputs`' tensors, UPPER_CASE ones, and constructor-only integers of 8
    or more (`out_features`); smaller constructor-only integers (`kernel_size`, `stride`, a
    reduction `dim`) are settings, not sizes, and stay. Constructor-only floats (`eps`, a slope,
    a scale) are halved: a candidate must read them from its constructor. Constants computed
    from others (`K = N * 2`) follow them. Constants of 1 stay (often a flag or a kernel size).
    """
    uses, derived = problem.size_uses, problem.derived_sizes
    sizes: dict[str, Any] = {}
    kept: list[str] = []
    for k, v in problem.size_constants.items():
        use = uses.get(k, "unused")
        if k in derived:
            continue
        if isinstance(v, int):
            if v < 2:
                kept.append(f"{k}={v} (under 2)")
            elif use == "init" and v < 8 and not k.isupper():
                kept.append(f"{k}={v} (a constructor setting under 8)")
            else:
                sizes[k] = v // 2 + 1
        elif (
            isinstance(v, float) and use == "init" and v != 0 and v == v and abs(v) != float("inf")
        ):
            sizes[k] = v / 2
        else:
            kept.append(f"{k}={v!r} ({'a float input setting' if use == 'input' else 'not used'})")
    input_sizes = {k: v for k, v in sizes.items() if uses.get(k) == "input" and isinstance(v, int)}
    return GeneralizationPlan(sizes=sizes, input_sizes=input_sizes, kept=", ".join(kept))


def generalization_sizes(problem: Problem) -> dict[str, Any]:
    """The sizes the generalisation check tries first (`generalization_plan(problem).sizes`)."""
    return generalization_plan(problem).sizes


def shown_sizes(sizes: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sizes.items())


VerifyAt = Callable[[Problem], Verdict]
"""Verify the candidate against a problem (the same one at other sizes); may raise
ProblemError when the problem itself does not accept those sizes."""


def generalize(problem: Problem, verdict: Verdict, verify_at: VerifyAt) -> Verdict:
    """The generalisation check of a candidate found correct (`verdict`) at the problem's own
    sizes: verify it at the plan's sizes (all of them, else only the inputs' shapes). Returns
    `verdict` with notes when it holds (or could not be run), else the failing verdict."""
    plan = generalization_plan(problem)
    if plan.kept:
        verdict.evidence.notes.append(f"generalisation check: not varied: {plan.kept}")
    if not plan.sizes:
        verdict.evidence.notes.append(
            "generalisation check: the problem has no size constants to vary"
        )
        return verdict
    sizes, other, shown = plan.sizes, None, ""
    for sizes in (plan.sizes, plan.input_sizes):
        if not sizes:
            continue
        shown = shown_sizes(sizes)
        try:
            other = verify_at(problem.with_sizes(**sizes))
            break
        except ProblemError as exc:  # the reference itself does not accept those sizes
            verdict.evidence.notes.append(
                f"generalisation check: at {shown} the problem itself fails: {exc}"
            )
            other = None
        if sizes == plan.input_sizes:
            break
    if other is None:
        verdict.evidence.notes.append("generalisation check skipped: no sizes the problem accepts")
        return verdict
    if other.correct:
        verdict.evidence.notes.append(f"generalisation check passed at {shown}")
        return verdict
    other.message = f"correct at the problem's sizes, but not at {shown}: {other.message}"
    other.evidence.notes.append(f"generalisation check failed at {shown}")
    other.evidence.notes.extend(size_dependence(problem, sizes, verify_at))
    return other


def size_dependence(problem: Problem, sizes: dict[str, Any], verify_at: VerifyAt) -> list[str]:
    """Which sizes the candidate depends on: each varied alone (at most 4 verifications)."""
    if len(sizes) < 2 or len(sizes) > 4:
        return []
    failing, passing = [], []
    for name, value in sizes.items():
        try:
            alone = verify_at(problem.with_sizes(**{name: value}))
        except ProblemError:
            continue
        (passing if alone.correct else failing).append(f"{name}={value!r}")
    return [
        "the candidate depends on "
        + (", ".join(failing) or "no single size (only on a combination)")
        + " (each varied alone"
        + (f"; correct with {', '.join(passing)} alone)" if passing else ")")
    ]
