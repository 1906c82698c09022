"""Precision: the references in full fp32 on a GPU, and the judge's check for lower precision.

**Full fp32 references.**

PyTorch lets cuDNN convolutions use TF32 by default (`torch.backends.cudnn.allow_tf32` is True;
cuBLAS matmuls are fp32 unless `torch.backends.cuda.matmul.allow_tf32` is set). TF32 keeps 10
mantissa bits: a KernelBench convolution's reduction of thousands of products then errs by
~1e-3, ten times the default tolerance, so an exact fp32 candidate would read as a mismatch
against a TF32 reference, and a TF32 candidate would pass the precision check. References (the
judge's outputs, the timing job's freshness check) are therefore computed in full fp32; the
eager and torch.compile baselines keep PyTorch's defaults, the speed the user has.

**Lower precision, element by element** (`precision_sample`, `lower_precision`). An fp32
candidate within the tolerance may still compute in fp16/bf16 or feed a dot TF32 inputs; its
error against an fp64 reference then exceeds, by orders of magnitude, the error any fp32
computation makes at the same element. The judge compares each sampled element's error with
that element's own scale of fp32 error, never with a whole-output maximum (where the small
elements' errors hide under the large ones').
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def full_fp32() -> Iterator[None]:
    """No TF32 in cuDNN or cuBLAS while the block runs; the previous settings restored after."""
    import torch

    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


# ---------------------------------------------------------------------------------------------
# Lower precision in fp32 outputs, element by element (the judge)

PRECISION_FACTOR = 64.0
"""How far (against an fp64 reference) a candidate's fp32 element may err beyond PyTorch's own
fp32 error at that element (`PrecisionSample.scale`) before it counts as computed in lower
precision. Calibrated on the honest examples (`benchmarks/precision_calibration.py`, output in
`benchmarks/results/precision_per_element.md`): their worst sampled element errs at most a few
times its scale; fp16 rounding is up to 2^12 fp32 ulps, a TF32 dot's inputs 2^13."""
SAMPLE_ELEMS = 1 << 16
"""Elements checked per output and trial: all of a smaller output, a random sample of a larger
one (drawn by the judge for each trial: the candidate cannot know which). Lower precision that
touches a fraction f of the elements is missed with probability (1 - f)^65536: 1e-28 at
f = 0.001."""
WINDOW = 8
"""Neighbours on each side (row-major flat order) whose PyTorch errors give an element's scale
where PyTorch's own is exact by luck."""


@dataclasses.dataclass(kw_only=True)
class PrecisionSample:
    """One fp32 output's sampled elements, made once a trial from its fp32 and fp64 references:
    flat indices, the fp64 values there, and each element's scale of PyTorch's fp32 error."""

    index: Any
    """Flat (row-major) indices of the sampled elements, int64, on the outputs' device."""
    reference64: Any
    """The fp64 reference there (float64)."""
    pytorch_err: Any
    """|fp32 reference - fp64 reference| there (float64): PyTorch's own error."""
    scale: Any
    """The error an fp32 computation makes there: the largest of PyTorch's own error at the
    element, 2^-23 of its fp64 value (an ulp or two: where PyTorch is exact, an equally honest
    order is an ulp off), and the median of PyTorch's errors over the element and its
    `WINDOW` neighbours each side (where PyTorch is exact by luck on an element whose terms are
    large, a sum that nearly cancels: the median is PyTorch's typical error there, and a few
    large errors among the neighbours cannot raise it), and 2^-23 of the output's typical
    magnitude (the root mean square of the sampled reference values: an element far smaller
    than the others may come from intermediates the size of those); at least the smallest
    normal fp32 number (a denormal flushed to zero is fp32 arithmetic too). inf where the
    references are not finite (nothing is judged there)."""


def gather_flat(t: Any, index: Any) -> Any:
    """`t`'s elements at row-major flat indices (any layout; no copy of `t`)."""
    import torch

    if t.is_contiguous():
        return t.reshape(-1)[index]
    return t[torch.unravel_index(index, tuple(t.shape))]


def _typical_magnitude(values: Any) -> Any:
    """The root mean square of the finite sampled reference values (0 where none is)."""
    import torch

    finite = values[torch.isfinite(values)]
    return finite.square().mean().sqrt() if finite.numel() else values.new_zeros(())


def sample_index(n: int, sample: int, generator: Any) -> Any:
    """`sample` distinct flat indices of `n` elements drawn uniformly, in random order (all of
    them in order where `n <= sample`), in time and memory that do not grow with `n`. A
    permutation of all `n` (`torch.randperm`) costs 8 bytes an element and about 0.3 us an
    element of one core: for KernelBench's 6.4 GB LeakyReLU output, 12.9 GB of the judge's host
    memory and minutes each trial, while the candidate's job waited past its time limit (the
    H200's `crash` at 3cfa102, session 16)."""
    import torch

    if n <= sample:
        return torch.arange(n)
    if n <= 4 * sample:
        return torch.randperm(n, generator=generator)[:sample]
    # Distinct values of uniform draws, given how many there are, are a uniform subset; a
    # uniform subset of those is one of `n`. Two draws an element leave at least 1.5x `sample`
    # distinct ones at n > 4 x sample: the loop runs once but by a rare chance.
    picked = torch.empty(0, dtype=torch.int64)
    while picked.numel() < sample:
        draws = torch.randint(n, (2 * sample,), generator=generator, dtype=torch.int64)
        picked = torch.cat([picked, draws]).unique()
    return picked[torch.randperm(picked.numel(), generator=generator)[:sample]]


def precision_sample(
    expected: list, reference64: list, generator: Any, *, sample: int = SAMPLE_ELEMS
) -> list[PrecisionSample | None]:
    """Per output: its `PrecisionSample` (None for an output that is not an fp32 tensor with an
    fp64 reference of its shape). `generator` (a torch.Generator on the CPU) draws the sample."""
    import torch

    out: list[PrecisionSample | None] = []
    eps = torch.finfo(torch.float32).eps
    for e, r in zip(expected, reference64):
        if (
            not isinstance(e, torch.Tensor)
            or not isinstance(r, torch.Tensor)
            or e.dtype != torch.float32
            or tuple(e.shape) != tuple(r.shape)
            or e.numel() == 0
        ):
            out.append(None)
            continue
        n = e.numel()
        centre = sample_index(n, sample, generator).to(e.device)
        offsets = torch.arange(-WINDOW, WINDOW + 1, device=e.device)
        window = (centre[:, None] + offsets[None, :]).clamp_(0, n - 1)
        r_win = gather_flat(r, window).double()
        e_win = gather_flat(e, window).double()
        err = (e_win - r_win).abs_()
        err.masked_fill_(~torch.isfinite(err), float("nan"))
        r_c, err_c = r_win[:, WINDOW], err[:, WINDOW]
        scale = torch.maximum(err_c, r_c.abs() * eps)
        scale = torch.fmax(scale, err.nanmedian(dim=1).values)
        # An ulp of the output's typical magnitude: an element far smaller than its output's
        # others may come out of a computation whose intermediates were the size of those (a
        # GELU tail 0.5*h*(1+erf(h/sqrt2)) at h = -5, an ulp of 1 in the bracket), and an
        # honest fp32 order of operations errs there by an ulp of the intermediates, not of
        # the element (H200, session 16: an honest fused linear+GELU at inputs x100, 99x
        # PyTorch's error on one element of 2,475, 1e-9 of the output's magnitude).
        scale = torch.fmax(scale, _typical_magnitude(r_c) * eps)
        # fp32 hardware that flushes denormals (a GPU's fast paths, Triton's default) errs by up
        # to the smallest normal number; fp16's own smallest normal is 2^112 times larger.
        scale.clamp_min_(torch.finfo(torch.float32).tiny)
        scale.masked_fill_(~torch.isfinite(r_c) | torch.isnan(err_c), float("inf"))
        out.append(PrecisionSample(index=centre, reference64=r_c, pytorch_err=err_c, scale=scale))
    return out


def element_ratios(g: Any, s: PrecisionSample, allowance64: Any = None) -> tuple[Any, Any]:
    """(error against the fp64 reference, that error over the element's scale) at the sampled
    elements of one output; with `allowance64` (the fp64 rule's allowance, whole output:
    `ALLOWANCE_FACTOR` * max(D, `ORDER_FACTOR` * C), `tools.checks.fp64_rule.fp32_scale`), its share
    of the element's conditioning (divided by both factors: at least C, how far an ulp on the
    inputs moves the exact result there, and D / `ORDER_FACTOR`) raises the scale where larger.
    Not the order's share: 64x a sequential order's scale would pass bf16x3 products. A
    non-finite value where the references are finite is the tolerance's business: ratio 0."""
    import torch

    from tools.checks.fp64_rule import ALLOWANCE_FACTOR, ORDER_FACTOR

    scale = s.scale
    if isinstance(allowance64, torch.Tensor) and tuple(allowance64.shape) == tuple(g.shape):
        drawn = gather_flat(allowance64, s.index).double().nan_to_num_(0.0, 0.0, 0.0)
        scale = torch.fmax(scale, drawn / (ALLOWANCE_FACTOR * ORDER_FACTOR))
    err = (gather_flat(g, s.index).double() - s.reference64).abs_()
    err.masked_fill_(~torch.isfinite(err), 0.0)
    return err, err / scale.clamp_min(torch.finfo(torch.float64).tiny)


def lower_precision(
    got: list,
    samples: list[PrecisionSample | None],
    *,
    allowance64: list | None = None,
    factor: float = PRECISION_FACTOR,
) -> str | None:
    """Whether fp32 outputs were computed in lower precision: some sampled element's error
    against the fp64 reference beyond `factor` times its scale (`PrecisionSample.scale`,
    `element_ratios`). A message, or None."""
    import torch

    for j, (g, s) in enumerate(zip(got, samples)):
        if s is None or not isinstance(g, torch.Tensor) or g.dtype != torch.float32:
            continue
        a = allowance64[j] if allowance64 is not None and j < len(allowance64) else None
        err, ratio = element_ratios(g, s, a)
        count = int((ratio > factor).sum())
        if not count:
            continue
        k = int(ratio.argmax())
        where = [int(i) for i in torch.unravel_index(s.index[k], tuple(g.shape))]
        return (
            f"output {j} was computed in lower precision than its fp32 problem: {count} of "
            f"{s.index.numel()} checked elements err against an fp64 reference by more than "
            f"{factor:g}x the error an fp32 computation makes there (the worst, at {where}: "
            f"{float(err[k]):.3g}, {float(ratio[k]):.0f}x; PyTorch's own fp32 error there "
            f"{float(s.pytorch_err[k]):.3g}); within the tolerance here, but it is fp16/bf16 "
            "arithmetic or a TF32 tl.dot (the default input_precision on fp32 data: pass "
            'input_precision="ieee"), and its error grows with the problem'
        )
    return None
