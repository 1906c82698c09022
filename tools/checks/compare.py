"""Compare candidate outputs with reference outputs, on the tensors' own device.

Outputs reach several GB, so the comparison runs over flat chunks and converts one chunk at a time
to float64: extra memory follows the chunk size, not the output's.

Tolerances are per dtype (fp32 1e-4, half types 1e-2) unless overridden; the `kernelbench-v0`
preset is 1e-2 for everything, as in KernelBench's first release. Where an fp32 reference is
itself inaccurate (the result cancels), the fp64 rule (`tools.checks.fp64_rule`) may excuse elements
outside the tolerance, within its limits: `compare_outputs` applies them output by output.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from tools.checks.fp64_rule import (
    EXCUSE_CAP_FLOOR,
    FP32_CLAIM_FACTOR,
    cancelling,
    claim_ratio,
    excuse_cap_words,
    no_farther_from_fp64,
    reach,
)
from tools.checks.mismatch_hints import (
    HINT_ALL_ZEROS,
    HINT_FORMULA,
    HINT_NEVER_WRITTEN,
    hint_nan_blocks,
    hint_scattered,
    hint_tail,
    pattern_hint,
)
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
    return not any(_bad_counts(got, expected, atol, rtol, chunk_elems))


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
    counts = _bad_counts(got, expected, atol, rtol, chunk_elems, reference64, allowance64)
    bad_count = sum(counts)
    if bad_count == 0:
        return None
    floating = _is_floating(expected)
    t = _tally(got, expected, atol, rtol, counts, chunk_elems, reference64, allowance64)
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
            g.double(), e.double(), _bad_mask(g, e, atol, rtol, floating, r, a)
        )
    else:
        report.hint = _tally_hint(t, bad_count, n)
    if t.bad_nonfinite:
        report.hint = _nonfinite_words(t, bad_count) + report.hint
    return report


def _nonfinite_words(t: _Tally, bad_count: int) -> str:
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


def _is_floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


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
    for start, gc, ec, rc, ac in _Pieces(got, expected, chunk_elems, reference64, allowance64):
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
        f"{_unravel(worst_at, tuple(got.shape))}: {worst_err:.3g}, {worst:.0f}x; PyTorch's "
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
    for _, _, ec, _, ac in _Pieces(e, e, chunk_elems, e, a64):
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
    floating = _is_floating(expected)
    count, worst = 0, 0.0
    for _, gc, ec, rc, ac in _Pieces(got, expected, chunk_elems, reference64, allowance64):
        assert rc is not None
        took = _bad_mask(gc, ec, atol, rtol, floating) & no_farther_from_fp64(gc, ec, rc, ac)
        took &= cancelling(ec, rc, atol, rtol, ac)
        n = int(took.sum())
        if n:
            count += n
            err = (ec.double() - rc.double()).abs_()
            if ac is not None:
                err = torch.fmax(err, ac.double().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0))
            worst = max(worst, float(err[took].max()))
    return count, worst


def _bad_mask(
    g: torch.Tensor,
    e: torch.Tensor,
    atol: float,
    rtol: float,
    floating: bool,
    r64: torch.Tensor | None = None,
    a64: torch.Tensor | None = None,
) -> torch.Tensor:
    """Elements of `g` outside the tolerance of `e` (same shape, same device); with `r64`, those
    that are also farther from it than `e` is (`no_farther_from_fp64`, with the allowance
    `a64`) or do not cancel (`cancelling`)."""
    if not floating:
        return g != e
    # Two float64 copies, then in place (`copy=True`: `.double()` of float64 is the input itself).
    gf, ef = g.to(torch.float64, copy=True), e.to(torch.float64, copy=True)
    ok = torch.isnan(gf) & torch.isnan(ef)
    ok |= torch.isinf(gf) & (gf == ef)  # the same infinity
    # An expected +-inf with rtol > 0 makes the bound inf, which any non-NaN value meets (so an
    # opposite infinity passes too): the rule as it has always been, unlike torch.isclose.
    ok |= gf.sub_(ef).abs_() <= ef.abs_().mul_(rtol).add_(atol)
    del gf, ef
    if r64 is not None and not bool(ok.all()):
        ok |= no_farther_from_fp64(g, e, r64, a64) & cancelling(e, r64, atol, rtol, a64)
    return ~ok


def _blocks(shape: tuple[int, ...], chunk: int, prefix: tuple = ()) -> Iterator[tuple]:
    """Indices cutting a tensor of `shape` into pieces of at most `chunk` elements, each a run of
    the row-major flat order, in that order. Whole leading-dimension slices where they fit, so a
    non-contiguous piece is copied (by `reshape`) a chunk at a time, never whole."""
    if not shape:
        yield prefix
        return
    inner = math.prod(shape[1:])
    if inner <= chunk:
        step = chunk // max(inner, 1)
        for j in range(0, shape[0], step):
            yield (*prefix, slice(j, j + step))
    else:
        for j in range(shape[0]):
            yield from _blocks(shape[1:], chunk, (*prefix, j))


class _Pieces:
    """`got` and `expected` (and `reference64` and `allowance64`, where given) cut the same way
    into flat runs of at most `chunk_elems` elements: iterating gives (flat start, got piece,
    expected piece, reference64 piece or None, allowance64 piece or None), 1-D, on `got`'s
    device."""

    def __init__(
        self,
        got: torch.Tensor,
        expected: torch.Tensor,
        chunk_elems: int,
        reference64: torch.Tensor | None = None,
        allowance64: torch.Tensor | None = None,
    ) -> None:
        g, e = got.detach(), expected.detach()
        r = reference64.detach() if reference64 is not None else None
        a = allowance64.detach() if r is not None and allowance64 is not None else None
        if all(t is None or t.is_contiguous() for t in (g, e, r, a)):
            g, e = g.view(-1), e.view(-1)  # even chunks, all views
            r = r.view(-1) if r is not None else None
            a = a.view(-1) if a is not None else None
        self.got, self.expected, self.reference64, self.allowance64 = g, e, r, a
        self.blocks = list(_blocks(tuple(g.shape), max(1, chunk_elems)))

    def __len__(self) -> int:
        return len(self.blocks)

    def __iter__(
        self,
    ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]]:
        start = 0
        for index in self.blocks:
            gc = self.got[index].reshape(-1)
            rc = ac = None
            if self.reference64 is not None:
                rc = self.reference64[index].reshape(-1).to(gc.device)
            if self.allowance64 is not None:
                ac = self.allowance64[index].reshape(-1).to(gc.device)
            yield start, gc, self.expected[index].reshape(-1).to(gc.device), rc, ac
            start += gc.numel()


def _bad_counts(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    chunk_elems: int,
    reference64: torch.Tensor | None = None,
    allowance64: torch.Tensor | None = None,
) -> list[int]:
    """Bad elements per chunk, with one host sync for the whole tensor (two with `reference64`,
    where some chunk is outside the tolerance)."""
    floating = _is_floating(expected)
    pieces = _Pieces(got, expected, chunk_elems, reference64, allowance64)
    # Written in place: keeping a 0-dim tensor per chunk pins small blocks among the chunks' freed
    # temporaries (glibc, 32 chunks of 1 Mi elements: 226 MiB of heap kept instead of 45 MiB).
    counts = torch.zeros(len(pieces), dtype=torch.int64, device=got.device)
    # On the CPU, a chunk equal element for element has no bad element under any tolerance
    # (|g - e| = 0 <= atol + rtol * |e|; equal infinities; NaN is never `equal`, so a chunk with
    # one takes the full rule): one pass of compares instead of float64 copies, 40x less time
    # on a 1 GiB output. Not on a GPU, where it would sync once a chunk.
    exact_ok = got.device.type == "cpu" and atol >= 0 and rtol >= 0
    for i, (_, gc, ec, rc, ac) in enumerate(pieces):
        if exact_ok and gc.dtype == ec.dtype and torch.equal(gc, ec):
            continue
        counts[i] = _bad_mask(gc, ec, atol, rtol, floating, rc, ac).sum()
    return counts.tolist()


@dataclass
class _Tally:
    """Whole-tensor statistics gathered chunk by chunk (the second pass, for wrong outputs)."""

    finite_abs: int
    sum_abs: float
    max_abs: float
    finite_rel: int
    max_rel: float
    nan_got: int
    inf_got: int
    nan_expected: int
    zero_got: int
    zero_expected: int
    bad_not_nan: int
    """Elements where being bad and `got` being NaN disagree (0: exactly the NaNs are bad)."""
    first_bad: list[dict[str, Any]]
    first_bad_flat: int
    bad_nonfinite: int = 0
    """Bad elements whose difference is not a number (NaN or an infinity on one side only)."""


def _tally(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    counts: list[int],
    chunk_elems: int,
    reference64: torch.Tensor | None = None,
    allowance64: torch.Tensor | None = None,
) -> _Tally:
    """The second pass, over a wrong output; `counts` (bad elements per chunk) says which chunks
    hold the first bad elements."""
    floating = _is_floating(expected)
    shape = tuple(got.shape)
    # Accumulated on the device, in place: counts, then the sum and maxima of finite errors.
    ints = torch.zeros(9, dtype=torch.int64, device=got.device)
    floats = torch.zeros(3, dtype=torch.float64, device=got.device)
    first_bad: list[dict[str, Any]] = []
    first_bad_flat = -1
    pieces = _Pieces(got, expected, chunk_elems, reference64, allowance64)
    for (start, gc, ec, rc, ac), count in zip(pieces, counts):
        bad = _bad_mask(gc, ec, atol, rtol, floating, rc, ac)
        gf, ef = gc.double(), ec.double()  # read only
        nan_g = torch.isnan(gf)
        diff = (gf - ef).abs_()
        rel = diff / ef.abs().clamp_min_(1e-12)
        finite, rel_finite = torch.isfinite(diff), torch.isfinite(rel)
        ints += torch.stack(
            [
                finite.sum(),
                rel_finite.sum(),
                nan_g.sum(),
                torch.isinf(gf).sum(),
                torch.isnan(ef).sum(),
                (gf == 0).sum(),
                (ef == 0).sum(),
                (bad != nan_g).sum(),
                (bad & ~finite).sum(),
            ]
        )
        # Zeroing the non-finite errors leaves the sum and the maxima of the finite ones.
        diff.masked_fill_(~finite, 0.0)
        rel.masked_fill_(~rel_finite, 0.0)
        floats[0] += diff.sum()
        torch.maximum(floats[1:], torch.stack([diff.amax(), rel.amax()]), out=floats[1:])
        if count and len(first_bad) < 5:
            for k in bad.nonzero().reshape(-1)[: 5 - len(first_bad)].tolist():
                if first_bad_flat < 0:
                    first_bad_flat = start + k
                first_bad.append(
                    {
                        "index": _unravel(start + k, shape),
                        "got": _num(gf[k]),
                        "expected": _num(ef[k]),
                    }
                )
    i, f = ints.tolist(), floats.tolist()
    return _Tally(
        finite_abs=i[0],
        sum_abs=f[0],
        max_abs=f[1],
        finite_rel=i[1],
        max_rel=f[2],
        nan_got=i[2],
        inf_got=i[3],
        nan_expected=i[4],
        zero_got=i[5],
        zero_expected=i[6],
        bad_not_nan=i[7],
        first_bad=first_bad,
        first_bad_flat=first_bad_flat,
        bad_nonfinite=i[8],
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for d in reversed(shape):
        flat, r = divmod(flat, d)
        index.append(r)
    return index[::-1]


def _num(x: torch.Tensor) -> float | int | str:
    v = x.item()
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    return v


def _tally_hint(t: _Tally, bad_count: int, n: int) -> str:
    """`pattern_hint` for outputs too large for whole copies: the same words, from counts (no
    row or column patterns)."""
    if t.nan_got == n and t.nan_expected == 0:
        return HINT_NEVER_WRITTEN
    if t.zero_got == n and t.zero_expected < n:
        return HINT_ALL_ZEROS
    if bad_count == n:
        return HINT_FORMULA
    # Every bad index is >= the first one, so this many means all of them to the end.
    if bad_count == n - t.first_bad_flat:
        return hint_tail(t.first_bad_flat)
    if t.nan_got and t.bad_not_nan == 0:
        return hint_nan_blocks(t.nan_got)
    return hint_scattered(bad_count, n)


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
