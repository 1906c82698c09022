"""The generalisation check over sizes: which of a problem's size constants to change and to
what (`generalization_plan`), and the check itself (`generalize`): verify again at other sizes,
then say which sizes the candidate depends on."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools.core import pyast
from tools.core.errors import ProblemError
from tools.core.problem import Problem, _arithmetic
from tools.core.results import Verdict


@dataclass
class GeneralizationPlan:
    """The sizes a generalisation check tries, and what it leaves alone and why."""

    sizes: dict[str, Any]
    """Every constant varied: shapes of `get_inputs`, constructor sizes, float settings."""
    input_sizes: dict[str, Any]
    """Only the shapes of `get_inputs` (the fallback when the problem rejects `sizes`)."""
    kept: str
    """The constants not varied, with the reason (for the verdict's notes)."""

    @property
    def attempts(self) -> list[dict[str, Any]]:
        """The sizes to try, in order, until the problem itself accepts them: `sizes`, then
        `sizes` halved (divisibility between powers of two survives: GroupNorm's 64 channels in
        8 groups become 32 in 4, where 33 in 5 does not divide), then `input_sizes`, halved too."""
        tried: list[dict[str, Any]] = []
        for sizes in (self.sizes, halved(self.sizes), self.input_sizes, halved(self.input_sizes)):
            if sizes and sizes not in tried:
                tried.append(sizes)
        return tried


def halved(sizes: dict[str, Any]) -> dict[str, Any]:
    """The plan's sizes with integers halved instead (`v // 2`, at least 2; from the half-plus-one
    values back to about half the originals: 2049 -> 1024), tuples too; floats as they are."""

    def half(v: Any) -> Any:
        if isinstance(v, tuple):
            return tuple(half(e) for e in v)
        return max(2, (v - 1) if v > 2 else v) if isinstance(v, int) and v >= 2 else v

    return {k: half(v) for k, v in sizes.items()}


def generalization_plan(problem: Problem) -> GeneralizationPlan:
    """Other values for a problem's size constants (KernelBench's `batch_size = 16` included).

    Integers become about half plus one (so powers of two become odd and every size changes):
    those that shape `get_inputs`' tensors (and the elements of literal shape tuples it reads,
    `input_shape = (32768,)`), UPPER_CASE ones, and constructor-only integers of 8
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
    shapes = shape_tuples(problem)
    for k, v in shapes.items():
        sizes[k] = tuple(e // 2 + 1 if e >= 2 else e for e in v)
    input_sizes = {
        k: v
        for k, v in sizes.items()
        if k in shapes or (uses.get(k) == "input" and isinstance(v, int))
    }
    return GeneralizationPlan(sizes=sizes, input_sizes=input_sizes, kept=", ".join(kept))


def shape_tuples(problem: Problem) -> dict[str, tuple[int, ...]]:
    """Module-level tuples of integer literals that `get_inputs` reads (KernelBench's
    `input_shape = (32768,)` in `torch.rand(batch_size, *input_shape)`): sizes too. Tuples built
    from other constants (`(num_classes,)`) are not here: those constants vary, the tuple follows."""
    tree = pyast.parse(problem.source)
    reads: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    shapes: dict[str, tuple[int, ...]] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in reads
            and isinstance(node.value, ast.Tuple)
            and node.value.elts
        ):
            values = [_arithmetic(e, {}) for e in node.value.elts]  # `(8192 * 2,)` too
            if all(type(v) is int and v > 0 for v in values):
                shapes[node.targets[0].id] = tuple(values)
    return shapes


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
    sizes: verify it at the first of the plan's `attempts` the problem accepts. Returns
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
    for sizes in plan.attempts:
        shown = shown_sizes(sizes)
        try:
            other = verify_at(problem.with_sizes(**sizes))
            break
        except ProblemError as exc:  # the reference itself does not accept those sizes
            verdict.evidence.notes.append(
                f"generalisation check: at {shown} the problem itself fails: {exc}"
            )
            other = None
    if other is None:
        verdict.evidence.notes.append("generalisation check skipped: no sizes the problem accepts")
        return verdict
    if other.correct:
        verdict.evidence.notes.append(f"generalisation check passed at {shown}")
        return verdict
    other.message = f"correct at the problem's sizes, but not at {shown}: {what_failed(other)}"
    other.evidence.notes.append(f"generalisation check failed at {shown}")
    other.evidence.notes.extend(size_dependence(problem, sizes, verify_at))
    return other


def what_failed(verdict: Verdict) -> str:
    """A failing verdict in one line, in its error's own words: the line of the exception that
    says what went wrong, not a closing pointer ("See https://pytorch.org/docs/...", which the
    verdict's headline, the message's last line, was for some torch errors)."""
    lines = verdict.message.strip().splitlines()
    first = lines[0] if lines else verdict.status
    err = verdict.evidence.error
    if err is None:
        return first
    said = [
        ln.strip()
        for ln in err.message.strip().splitlines()
        if ln.strip() and not _pointer(ln.strip())
    ]
    if not said or said[-1] in first:
        return first
    head = first.split(": ", 1)[0] if ": " in first else first  # "the candidate raised at line 9"
    kind = f"{err.kind}: " if err.kind and not said[-1].startswith(err.kind) else ""
    return f"{head}: {kind}{said[-1][:300]}"


def _pointer(line: str) -> bool:
    """A line that points elsewhere or annotates (a URL, "See ...", a caret, a note in
    parentheses) rather than saying what failed."""
    return (
        line.startswith(("See ", "For more", "(", "^")) or "http://" in line or "https://" in line
    )


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
