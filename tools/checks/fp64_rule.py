"""The fp64 rule's bounds, element by element: where an fp32 output element outside the
tolerance may still count as correct (an fp32 reference is only so accurate where the result
cancels), and the limits on that (issue 35): the cancellation condition, the fp32 claim's scale
and the cap on the elements excused. Pure float64 arithmetic on tensors of one shape and device;
`tools.checks.compare` applies them chunk by chunk, `tools.checks.freshness` makes the draws behind them.
docs/verification.md, "the fp64 rule", says why each is what it is."""

from __future__ import annotations

import torch

FP64_SLACK = 2 * torch.finfo(torch.float32).eps
"""The rounding allowance of the fp64 rule (`no_farther_from_fp64`), relative to the element's
fp64 value: 2^-22 |ref64|, between 2 and 4 fp32 ulps of the element. An fp32 output can be no
closer to the fp64 value than half an ulp (its correct rounding), and the fp64 reference carries
its own (2^-29 times smaller) rounding error; the slack keeps a correctly rounded candidate from
failing where PyTorch's value happens to be about as close. It is far below any tolerance's rtol
(1e-4 is ~800 ulps), so it widens nothing the tolerance would not."""
ALLOWANCE_FACTOR = 3.0
"""The fp64 rule's allowance is this times PyTorch's largest fp32 error at the element over its
draws (`tools.checks.freshness.fp32_error_allowance`). With errors of one spread, the largest of 9
draws is under the candidate's own about 10% of the time; three times it, 5e-4 of the time
(Gaussian errors, 2M elements): a kernel as accurate as PyTorch loses about one element in 2,000
of those outside the tolerance, and one ten times less accurate still loses 59% of them."""
CANCELLING_SHARE = 1 / (ALLOWANCE_FACTOR + 1)
"""The cancellation condition (issue 35): the fp64 rule excuses an element only where PyTorch's
own fp32 error there (its largest over the draws) is at least this share of the tolerance there,
`atol + rtol |ref32|`: fp32 itself comes within a factor of the tolerance, which for a sum means
the result is small against its terms (relative error ~ 2^-24 times sum |terms| / |result|, so
at rtol 1e-4 the result is some 400 times smaller than its terms). Measured without knowing the
op: PyTorch's error over ulp-moved inputs is the condition number made visible. A quarter: an
element the allowance accepts is within (1 + ALLOWANCE_FACTOR) times PyTorch's error of the fp32
reference, so under the default tolerances every excused element already met it; it binds
where the slack alone could excuse an element (tolerances tighter than a few ulps)."""
FP32_CLAIM_FACTOR = 8.0
"""A kernel the fp64 rule excuses anywhere in an output is held, at every element of that
output, to this many times PyTorch's own fp32 error there (its largest over the draws, at least
`FP64_SLACK` of the value): excusing an element says "as accurate as fp32 where fp32 cannot meet
the tolerance", and the elements where it can show whether the kernel is. Measured on the CPU
(`benchmarks/allowance_calibration.py`, `benchmarks/results/allowance_calibration_cpu.md`: sums
and a GEMM, 2 seeds each): honest fp32 orders err at most 4.1x there (a GEMM in K-blocks of 32;
sums at most 3.3x); outputs rounded to 15 mantissa bits 20x (every row cancelling 10 to 1000
times: the precision check's 64x over one draw let them through) to 62x (a plain sum, a GEMM)."""
ORDER_FACTOR = 16.0
"""The fp32 error an element may carry in *any* order of fp32 arithmetic, in units of the
element's conditioning C: how far an fp32 ulp on every input (and weight) moves the *exact*
result there, the largest over the draws of |fp64 forward of the moved values - fp64 forward of
the trial's| (`tools.checks.freshness.fp32_error_allowance`). C is what one rounding of each term
costs, whatever the order; an order adds its own partial sums' roundings on top, up to about
sqrt(K) times C for a sequential chain of K terms. PyTorch's draws alone (D) measure PyTorch's
order: on the H200 (session 17) Triton's honest `tl.dot(input_precision="ieee")`, a sequential
FMA chain over K = 4,096, erred 15-23x D where cuBLAS's blocked order is accurate, and was
refused. The rule's scale at an element is therefore max(D, ORDER_FACTOR * C)
(`fp32_scale`). Measured on the CPU (`benchmarks/allowance_calibration.py`, 2 seeds): a
sequential FMA chain at K = 4,096 errs at most 23 C (4.0x max(D, 16 C)), a sequential sum of
4,096 terms 27 C (4.7x; 8 C made it 9.3x and refused it); on the GEMM outputs rounded to 15 bits
err 17-19x that scale, bf16x3 products 33-50x: past the claim's 8x (and the precision check,
which takes C without this factor, refuses both). Where rows cancel 10x or more, 15-bit outputs
are within it: so is a sequential fp32 sum there (docs/verification.md)."""
EXCUSE_CAP_FLOOR = 8
"""The cap on the elements the fp64 rule excuses in an output is the most elements any of
PyTorch's own fp32 draws has outside the tolerance of the trial's fp32 reference, plus this (the
counts are small and noisy on small outputs)."""


def no_farther_from_fp64(
    g: torch.Tensor,
    e: torch.Tensor,
    r64: torch.Tensor,
    allowance64: torch.Tensor | None = None,
) -> torch.Tensor:
    """Elements where `g` is no farther from the fp64 reference `r64` than the fp32 reference
    `e` is: |g - r64| <= |e - r64| + FP64_SLACK * |r64|, all three finite (an fp32 reference
    that overflowed or is NaN excuses nothing). With `allowance64` (PyTorch's largest fp32 error
    at each element over several draws, `tools.checks.freshness.fp32_error_allowance`; a NaN there
    allows nothing), the larger of it and |e - r64|. Same shape, same device; float64
    arithmetic."""
    gd, ed, rd = g.double(), e.double(), r64.to(device=g.device, dtype=torch.float64)
    ok = torch.isfinite(gd) & torch.isfinite(ed) & torch.isfinite(rd)
    bound = (ed - rd).abs_()
    if allowance64 is not None:
        allow = allowance64.to(device=g.device, dtype=torch.float64)
        bound = torch.fmax(bound, allow.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0))
    ok &= (gd - rd).abs_() <= bound.add_(rd.abs().mul_(FP64_SLACK))
    return ok


def fp32_scale(drawn: torch.Tensor, spread: torch.Tensor) -> torch.Tensor:
    """The fp32 error an element may carry in any order (in place into `drawn`, returned):
    max(D, `ORDER_FACTOR` * C), D PyTorch's largest fp32 error there over the draws, C the
    element's conditioning (the largest move of the exact result under the draws' ulp moves)."""
    return torch.fmax(drawn, spread.to(drawn.device, drawn.dtype).mul(ORDER_FACTOR), out=drawn)


def outside_truth(o32: torch.Tensor, o64: torch.Tensor, atol: float, rtol: float) -> int:
    """Elements of an fp32 output outside the tolerance of its own fp64 value (`o64`, the same
    inputs in float64): where fp32 itself misses the tolerance of the truth, an exact kernel
    misses that of the fp32 reference (the cap, `excuse_cap`, counts these)."""
    od = o64.to(o32.device, torch.float64)
    return int(((o32.double() - od).abs_() > od.abs().mul_(rtol).add_(atol)).sum())


def pytorch_error(
    e: torch.Tensor, r64: torch.Tensor, allowance64: torch.Tensor | None = None
) -> torch.Tensor:
    """The fp32 error scale at each element (float64, on `e`'s device): PyTorch's own |e - r64|,
    or the allowance's scale (`allowance64 / ALLOWANCE_FACTOR`: max(D, `ORDER_FACTOR` * C) over
    the draws, `fp32_scale`) where larger; a NaN or infinite allowance counts as 0."""
    err = (e.double() - r64.to(device=e.device, dtype=torch.float64)).abs_()
    if allowance64 is not None:
        drawn = allowance64.to(device=e.device, dtype=torch.float64)
        drawn = drawn.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).div_(ALLOWANCE_FACTOR)
        err = torch.fmax(err, drawn)
    return err


def cancelling(
    e: torch.Tensor,
    r64: torch.Tensor,
    atol: float,
    rtol: float,
    allowance64: torch.Tensor | None = None,
) -> torch.Tensor:
    """The cancellation condition: elements where PyTorch's own fp32 error (`pytorch_error`) is
    at least `CANCELLING_SHARE` of the tolerance there (`atol + rtol |e|`), so that fp32 itself
    cannot be trusted to meet the tolerance: the result is small against its terms."""
    tol = e.double().abs_().mul_(rtol).add_(atol)
    return pytorch_error(e, r64, allowance64) >= tol.mul_(CANCELLING_SHARE)


def claim_ratio(
    g: torch.Tensor, e: torch.Tensor, r64: torch.Tensor, allowance64: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(|g - r64|, PyTorch's error there (`pytorch_error`), the first over the fp32 claim's
    scale: that error, at least `FP64_SLACK` of |r64| and the smallest normal fp32 number), all
    float64 on `g`'s device; the ratio is 0 where it or PyTorch's error is not finite (where
    PyTorch overflowed there is no fp32 error to hold a kernel to)."""
    rd = r64.to(device=g.device, dtype=torch.float64)
    own = pytorch_error(e, rd, allowance64)
    scale = torch.fmax(own, rd.abs().mul_(FP64_SLACK)).clamp_min_(torch.finfo(torch.float32).tiny)
    err = (g.double() - rd).abs_()
    ratio = err / scale
    ratio.masked_fill_(~(torch.isfinite(ratio) & torch.isfinite(own)), 0.0)
    return err, own, ratio


def excuse_cap(outside_per_draw: int) -> int:
    """The most elements the fp64 rule may excuse in an output: the most elements any one of
    PyTorch's own fp32 draws (`tools.checks.freshness.fp32_error_allowance`, `record["outside"]`) had
    outside the tolerance of the trial's fp32 reference or of its own fp64 value (session 17:
    where cuBLAS's draws repeat its reference's rounding, an exact kernel was refused on
    level2/14), plus `EXCUSE_CAP_FLOOR`; `tools.checks.compare.cap_refusal` raises it to the elements
    where fp32 in any order can miss the tolerance (`reach`). A kernel as
    accurate as PyTorch misses the tolerance about as often as PyTorch misses it against itself
    (measured: 71-82% of it where hundreds to thousands of elements cancel); one that needs the
    rule on more elements is less accurate than fp32 across the output, though within the
    allowance at each (3x PyTorch's error everywhere: 110-116% of it)."""
    return int(outside_per_draw) + EXCUSE_CAP_FLOOR


def reach(e: torch.Tensor, allowance64: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Elements where the fp32 error scale (`pytorch_error` with the allowance: max(D,
    `ORDER_FACTOR` * C)) reaches the tolerance of the fp32 reference, `atol + rtol |e|`: where
    fp32 arithmetic in some order can miss the tolerance. The cap (`excuse_cap`) is at least
    their count (`tools.checks.compare.fp32_reach_count`): an fp32 order less accurate than PyTorch's
    misses where its own error reaches the tolerance, not where PyTorch's does."""
    tol = e.double().abs_().mul_(rtol).add_(atol)
    scale = allowance64.to(device=e.device, dtype=torch.float64)
    return scale.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).div_(ALLOWANCE_FACTOR) >= tol


def excuse_cap_words(excused: int, cap: int, numel: int, *, output_index: int = 0) -> str:
    """The message of an output refused by the cap."""
    return (
        f"output {output_index}: the fp64 rule would excuse {excused} of {numel} elements "
        f"outside the tolerance, over its cap of {cap} (fp32 misses the tolerance on at most "
        f"{cap - EXCUSE_CAP_FLOOR} elements, plus {EXCUSE_CAP_FLOOR}: PyTorch's own fp32 draws "
        "on inputs an ulp away, against its reference or the fp64 truth, and the elements where "
        "fp32 in any order can err by the tolerance): where the result cancels, the kernel "
        "misses the tolerance more often than fp32 rounding does, so it is less accurate than "
        "fp32 across the output (lower-precision arithmetic)."
    )
