"""Compare candidate outputs with reference outputs, on the tensors' own device.

Outputs reach several GB, so the comparison runs over flat chunks and converts one chunk at a time
to float64: extra memory follows the chunk size, not the output's (the chunked passes:
`tools.checks.compare_chunks`).

Tolerances are per dtype (fp32 1e-4, half types 1e-2) unless overridden; the `kernelbench-v0`
preset is 1e-2 for everything, as in KernelBench's first release. Where an fp32 reference is
itself inaccurate (the result cancels), the fp64 rule (`tools.checks.fp64_rule`) may excuse elements
outside the tolerance, within its limits: `compare_outputs` applies them output by output.

Runs in the judge's job, and in the candidate's own jobs (the worker's checks, the timing job's
freshness check).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tools.checks.compare_chunks import (
    Pieces,
    Tally,
    bad_counts,
    bad_mask,
    is_floating,
    tally,
    tally_hint,
    unravel,
)
from tools.checks.fp64_rule import (
    EXCUSE_CAP_FLOOR,
    FP32_CLAIM_FACTOR,
    cancelling,
    claim_ratio,
    excuse_cap_words,
    no_farther_from_fp64,
    reach,
)
from tools.checks.mismatch_hints import pattern_hint
from tools.core.errors import BadInputError
from tools.core.results import MismatchReport

DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-6, 1e-6),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}
PRESETS = {"default": None, "kernelbench-v0": (1e-2, 1e-2)}
CHUNK_ELEMS = 1 << 24
"""Elements compared at once; the extra memory follows it, not the output's size. At 16 Mi
elements, measured on an H200: +0.4 GiB for a matching output, +1 GiB for a wrong one, alike for
1.6 and 6.4 GB outputs (KernelBench's range)."""
HINT_FULL_ELEMS = 1 << 24
"""Up to this many elements, `pattern_hint` looks at whole float64 copies (rows, columns);
beyond it the hint comes from per-chunk counts."""


@dataclass(kw_only=True)
class Tolerance:
    atol: float | None = None
    rtol: float | None = None
    preset: str = "default"

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise BadInputError(
                f"unknown tolerance preset {self.preset!r}; choose one of {', '.join(PRESETS)}"
            )

    def for_dtype(self, dtype: torch.dtype) -> tuple[float, float]:
        if not (dtype.is_floating_point or dtype.is_complex):
            return 0.0, 0.0
        base = PRESETS[self.preset] or DEFAULT_TOLERANCES.get(dtype, (1e-4, 1e-4))
        return (
            self.atol if self.atol is not None else base[0],
            self.rtol if self.rtol is not None else base[1],
        )


@dataclass(kw_only=True)
class Difference:
    """Result of comparing one run's outputs: `kind` is ok / shape / value."""

    kind: str
    message: str = ""
    report: MismatchReport | None = None
    accepted: int = 0
    """Elements outside the tolerance that the fp64 rule accepted (`no_farther_from_fp64`)."""
    accepted_max_ref_err: float = 0.0
    """The largest |reference - fp64 reference| among them."""
    excuse_cap: int | None = None
    """The most elements the rule could have excused over the outputs (`EXCUSE_CAP_FLOOR`), where
    the caps were given."""


def compare_outputs(
    got: list[torch.Tensor],
    expected: list[torch.Tensor],
    tol: Tolerance,
    *,
    trial: int,
    run: str = "first",
    reference64: list[torch.Tensor | None] | None = None,
    allowance64: list[torch.Tensor | None] | None = None,
    excuse_caps: list[int | None] | None = None,
) -> Difference:
    """Outputs against the reference, output by output. With `reference64` (fp64 outputs of the
    same inputs, per output or None), an fp32 element outside the tolerance still counts as
    correct where it is no farther from the fp64 value than the reference is
    (`no_farther_from_fp64`) and the element cancels (`cancelling`); `Difference.accepted`
    counts those elements. `allowance64` (per output, beside `reference64`): PyTorch's largest
    fp32 error over several draws times `ALLOWANCE_FACTOR` (`tools.checks.freshness.
    fp32_error_allowance`), used in place of its one draw where larger; with it, an output in
    which the rule excused elements must also keep every element within `FP32_CLAIM_FACTOR`
    times PyTorch's error there (`fp32_claim_finding`). `excuse_caps` (per output, or None): the
    most elements the rule may excuse in it (`excuse_cap`); more is a mismatch."""
    shape = _shape_difference(got, expected)
    if shape is not None:
        return shape
    accepted, accepted_err, caps = 0, 0.0, None
    for i, (g, e) in enumerate(zip(got, expected)):
        atol, rtol = tol.for_dtype(e.dtype)
        r64 = reference64[i] if reference64 is not None and i < len(reference64) else None
        if r64 is not None and (e.dtype != torch.float32 or tuple(r64.shape) != tuple(e.shape)):
            r64 = None
        a64 = allowance64[i] if r64 is not None and allowance64 and i < len(allowance64) else None
        if a64 is not None and tuple(a64.shape) != tuple(e.shape):
            a64 = None
        if r64 is not None and allclose(g, e, atol, rtol):
            continue  # within the tolerance: the rule has nothing to excuse here
        report = mismatch_report(
            g,
            e,
            atol,
            rtol,
            output_index=i,
            trial=trial,
            run=run,
            reference64=r64,
            allowance64=a64,
        )
        if report is not None:
            return Difference(kind="value", message=summarise(report), report=report)
        if r64 is None:
            continue
        n, err = fp64_accepted(g, e, r64, atol, rtol, allowance64=a64)
        cap = excuse_caps[i] if excuse_caps is not None and i < len(excuse_caps) else None
        if n and a64 is not None:
            refusal = fp32_claim_finding(g, e, r64, a64, output_index=i, excused=n)
            refusal = refusal or cap_refusal(n, cap, e, a64, atol, rtol, output_index=i)
            if refusal is not None:
                plain = mismatch_report(g, e, atol, rtol, output_index=i, trial=trial, run=run)
                tail = f" The tolerance alone: {summarise(plain)}" if plain is not None else ""
                return Difference(kind="value", message=refusal + tail, report=plain)
        if cap is not None:
            caps = (caps or 0) + cap
        accepted, accepted_err = accepted + n, max(accepted_err, err)
    return Difference(
        kind="ok", accepted=accepted, accepted_max_ref_err=accepted_err, excuse_cap=caps
    )


def _shape_difference(got: list, expected: list) -> Difference | None:
    """A `shape` difference where the outputs' count, types, shapes or dtypes differ; else None."""
    if len(got) != len(expected):
        return Difference(
            kind="shape",
            message=f"returned {len(got)} output(s), the reference returns {len(expected)}",
        )
    for i, (g, e) in enumerate(zip(got, expected)):
        if not isinstance(g, torch.Tensor):
            what = g if isinstance(g, str) and g.startswith("<") else type(g).__name__
            return Difference(kind="shape", message=f"output {i} is {what}, not a tensor")
        if tuple(g.shape) != tuple(e.shape):
            return Difference(
                kind="shape",
                message=f"output {i} has shape {list(g.shape)}, expected {list(e.shape)}",
            )
        if g.dtype != e.dtype:
            return Difference(
                kind="shape", message=f"output {i} has dtype {g.dtype}, expected {e.dtype}"
            )
    return None


def allclose(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    *,
    chunk_elems: int = CHUNK_ELEMS,
) -> bool:
    """True when `got` matches `expected` under `mismatch_report`'s rule (any device, chunked)."""
    if tuple(got.shape) != tuple(expected.shape):
        return False
    return not any(bad_counts(got, expected, atol, rtol, chunk_elems))


def mismatch_report(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    *,
    output_index: int = 0,
    trial: int = 0,
    run: str = "first",
    chunk_elems: int = CHUNK_ELEMS,
    hint_full_elems: int = HINT_FULL_ELEMS,
    reference64: torch.Tensor | None = None,
    allowance64: torch.Tensor | None = None,
) -> MismatchReport | None:
    """None when `got` matches; otherwise where and how it differs.

    Close means |g - e| <= atol + rtol * |e| in float64, NaN against NaN and an infinity against
    the same infinity; integer and bool tensors must be equal. With `reference64` (the fp64
    outputs of the same inputs), an element that is not close still counts as correct where it
    is no farther from the fp64 value than `expected` is (`no_farther_from_fp64`; with
    `allowance64`, than the larger of that and the allowance) and the element cancels
    (`cancelling`). Works on the
    tensors' own device, `chunk_elems` elements at a time: a matching output costs one pass, a
    wrong one a second pass for the statistics.
    """
    if tuple(got.shape) != tuple(expected.shape):
        raise ValueError(f"shapes differ: got {list(got.shape)}, expected {list(expected.shape)}")
    counts = bad_counts(got, expected, atol, rtol, chunk_elems, reference64, allowance64)
    bad_count = sum(counts)
    if bad_count == 0:
        return None
    floating = is_floating(expected)
    t = tally(got, expected, atol, rtol, counts, chunk_elems, reference64, allowance64)
    n = got.numel()
    report = MismatchReport(
        output_index=output_index,
        trial=trial,
        shape=list(got.shape),
        dtype=str(expected.dtype).replace("torch.", ""),
        atol=atol,
        rtol=rtol,
        # Elements that are NaN or infinite where the reference is not make the error infinite:
        # figures over the finite differences alone read "max abs err 0" for 712 NaNs.
        max_abs_err=t.max_abs if t.finite_abs and not t.bad_nonfinite else float("inf"),
        mean_abs_err=t.sum_abs / t.finite_abs
        if t.finite_abs and not t.bad_nonfinite
        else float("inf"),
        max_rel_err=t.max_rel if t.finite_rel and not t.bad_nonfinite else float("inf"),
        bad_count=bad_count,
        numel=n,
        first_bad=t.first_bad,
        nan_count=t.nan_got if got.is_floating_point() else 0,
        inf_count=t.inf_got if got.is_floating_point() else 0,
        expected_nan_count=t.nan_expected if expected.is_floating_point() else 0,
        run=run,
    )
    if reference64 is not None:
        report.fp64_checked = True
        report.fp64_accepted, report.fp64_accepted_max_ref_err = fp64_accepted(
            got, expected, reference64, atol, rtol, chunk_elems=chunk_elems, allowance64=allowance64
        )
    if n <= hint_full_elems:
        g = got.detach()
        e = expected.detach().to(g.device)
        r = reference64.detach().to(g.device) if reference64 is not None else None
        a = allowance64.detach().to(g.device) if r is not None and allowance64 is not None else None
        report.hint = pattern_hint(
            g.double(), e.double(), bad_mask(g, e, atol, rtol, floating, r, a)
        )
    else:
        report.hint = tally_hint(t, bad_count, n)
    if t.bad_nonfinite:
        report.hint = _nonfinite_words(t, bad_count) + report.hint
    return report


def _nonfinite_words(t: Tally, bad_count: int) -> str:
    """How many of the wrong elements are off by NaN or infinity (the error figures are
    infinite with them), and what the finite differences say."""
    held = ", ".join(f"{c} {k}" for c, k in ((t.nan_got, "NaN"), (t.inf_got, "Inf")) if c)
    rest = (
        f"; the other {t.finite_abs} elements: max abs err {t.max_abs:.3g}, "
        f"mean abs err {t.sum_abs / t.finite_abs:.3g}"
        if t.finite_abs
        else ""
    )
    return (
        f"{t.bad_nonfinite} of the {bad_count} elements outside the tolerance are off by an "
        f"infinite or undefined amount (the output holds {held or 'none'}){rest}. "
    )


def fp32_claim_finding(
    got: torch.Tensor,
    expected: torch.Tensor,
    reference64: torch.Tensor,
    allowance64: torch.Tensor,
    *,
    output_index: int = 0,
    excused: int = 0,
    factor: float = FP32_CLAIM_FACTOR,
    chunk_elems: int = CHUNK_ELEMS,
) -> str | None:
    """Whether an output in which the fp64 rule excused `excused` elements strays, at any element
    (within the tolerance or not), beyond `factor` times PyTorch's own fp32 error there
    (`pytorch_error` over the draws, at least `FP64_SLACK` of the fp64 value and the smallest
    normal fp32 number): a message, or None. Only finite elements of both references count
    (where PyTorch overflowed there is no fp32 error to hold a kernel to)."""
    count, worst, worst_at, worst_err, worst_own = 0, 0.0, -1, 0.0, 0.0
    for start, gc, ec, rc, ac in Pieces(got, expected, chunk_elems, reference64, allowance64):
        assert rc is not None
        err, own, ratio = claim_ratio(gc, ec, rc, ac)
        n = int((ratio > factor).sum())
        if n:
            count += n
            k = int(ratio.argmax())
            if float(ratio[k]) > worst:
                worst, worst_at = float(ratio[k]), start + k
                worst_err, worst_own = float(err[k]), float(own[k])
    if not count:
        return None
    return (
        f"output {output_index}: the fp64 rule excused {excused} element(s) outside the "
        f"tolerance as fp32 rounding where the result cancels, but {count} of "
        f"{got.numel()} elements err against an fp64 reference by more than {factor:g}x "
        f"the fp32 error scale there (max(D, 16 C) over its draws; the worst, at "
        f"{unravel(worst_at, tuple(got.shape))}: {worst_err:.3g}, {worst:.0f}x; PyTorch's "
        f"{worst_own:.3g}): a kernel excused as fp32 must be about as accurate as fp32 at "
        "every element, and this one is not (lower-precision arithmetic or rounding of the "
        "outputs, hidden where the result cancels)."
    )


def cap_refusal(
    excused: int, cap: int | None, e: torch.Tensor, a64: torch.Tensor, atol: float, rtol: float,
    *, output_index: int = 0, chunk_elems: int = CHUNK_ELEMS,
) -> str | None:  # fmt: skip
    """The cap's refusal of an output where the fp64 rule excused `excused` elements (None if
    none): over `cap` and over where fp32 in some order misses (`tools.checks.fp64_rule.reach`) + 8."""
    if cap is None or excused <= cap:
        return None
    reached = EXCUSE_CAP_FLOOR
    for _, _, ec, _, ac in Pieces(e, e, chunk_elems, e, a64):
        reached += int(reach(ec, ac, atol, rtol).sum())
    if excused <= max(cap, reached):
        return None
    return excuse_cap_words(excused, max(cap, reached), e.numel(), output_index=output_index)


def fp64_accepted(
    got: torch.Tensor,
    expected: torch.Tensor,
    reference64: torch.Tensor,
    atol: float,
    rtol: float,
    *,
    chunk_elems: int = CHUNK_ELEMS,
    allowance64: torch.Tensor | None = None,
) -> tuple[int, float]:
    """How many elements are outside the tolerance yet accepted by `no_farther_from_fp64` where
    they cancel (`cancelling`), and the largest error it allowed among them (|expected -
    reference64|, or the allowance where larger; 0.0 where none)."""
    floating = is_floating(expected)
    count, worst = 0, 0.0
    for _, gc, ec, rc, ac in Pieces(got, expected, chunk_elems, reference64, allowance64):
        assert rc is not None
        took = bad_mask(gc, ec, atol, rtol, floating) & no_farther_from_fp64(gc, ec, rc, ac)
        took &= cancelling(ec, rc, atol, rtol, ac)
        n = int(took.sum())
        if n:
            count += n
            err = (ec.double() - rc.double()).abs_()
            if ac is not None:
                err = torch.fmax(err, ac.double().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0))
            worst = max(worst, float(err[took].max()))
    return count, worst


def summarise(r: MismatchReport) -> str:
    return r.summary()


def normalise_outputs(out) -> list:
    """A forward's return value as a flat list (tensor, tuple/list of tensors, or a number)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat: list = []
        for o in out:
            flat.extend(normalise_outputs(o))
        return flat
    if isinstance(out, (int, float, bool)):
        return [torch.tensor(out)]
    return [out]
