"""Outputs stored at lower precision than the problem's fp32, told by cause, not by accuracy
(issue 35): the low mantissa bits of their elements.

An fp32 output rounded to 15 stored mantissa bits (or to bf16, or through an fp16 store) errs by
at most 2^-16 of each element: where a problem's rows cancel, an honest sequential fp32 sum errs
as much, so no accuracy rule (`tools.checks.fp64_rule`) can tell the two apart (the corpus's
cancel_sum__outputs_rounded_15_bits). Such outputs carry a fingerprint an fp32 computation never
has: the low mantissa bits of their nonzero finite elements are all zero (or one constant
pattern). An fp32 result rounded from a wider one has uniform low bits: one of 2^`LOW_BITS`
elements carries a given pattern of them.

The check compares the candidate with the reference's outputs on the same inputs, so a problem
whose reference itself carries few significant bits (integer-valued outputs, copies of
low-precision inputs, max pooling of such) is exempt by the comparison. The judge runs it in its
own process, on the output bytes it owns, under the fp32 contract only (`tools.job.judge`)."""

from __future__ import annotations

import secrets

import torch

LOW_BITS = 8
"""The low mantissa bits looked at: an element whose lowest 8 stored bits hold the output's most
common pattern of them (all zero, for an output rounded to fewer bits). Uniform bits put 1 in 256
elements there; a 15-bit output puts all of them."""
MIN_ELEMS = 256
"""Nonzero finite elements an output needs for the check (fewer say nothing reliable)."""
SAMPLE_ELEMS = 1 << 16
"""Elements looked at in a larger output, drawn at random positions (the same ones in the
candidate and the reference)."""
CANDIDATE_SHARE = 0.5
"""The candidate's share of elements with the common low-bit pattern above which it is refused..."""
REFERENCE_SHARE = 0.05
"""...while the reference's share is below this (uniform bits: 1/256 plus noise; at 256 elements
the most common of 256 patterns held at most 2.7% over 200 draws of randn in process)."""


def _mantissas(t: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    """The stored mantissas (int64) of the elements of a float32 tensor at `index` (all where
    None), flattened."""
    flat = t.detach().reshape(-1)
    if index is not None:
        flat = flat[index.to(flat.device)]
    return flat.contiguous().view(torch.int32).to(torch.int64).bitwise_and_(0x7FFFFF).cpu()


def _keep(t: torch.Tensor, index: torch.Tensor | None) -> torch.Tensor:
    """The nonzero finite elements among those looked at (a bool mask, on the CPU)."""
    flat = t.detach().reshape(-1)
    if index is not None:
        flat = flat[index.to(flat.device)]
    return ((flat != 0) & torch.isfinite(flat)).cpu()


def common_share(mantissas: torch.Tensor, bits: int = LOW_BITS) -> float:
    """The share of `mantissas` whose lowest `bits` bits hold their most common pattern."""
    if not mantissas.numel():
        return 0.0
    low = mantissas.bitwise_and(int((1 << bits) - 1))
    _, counts = torch.unique(low, return_counts=True)
    return float(counts.max()) / mantissas.numel()


def significant_bits(mantissas: torch.Tensor, share: float = 1.0) -> int:
    """The significant bits (24 at most, the implicit one included) of the elements that hold one
    common pattern of low bits: 24 less the most low bits that at least 90% of `share` of the
    elements hold in one pattern (`share`: those of `LOW_BITS` bits, `common_share`)."""
    for bits in range(23, 0, -1):
        if common_share(mantissas, bits) >= 0.9 * share:
            return 24 - bits
    return 24


def _sample(n: int, generator: torch.Generator | None) -> torch.Tensor | None:
    if n <= SAMPLE_ELEMS:
        return None
    if generator is None:  # positions the candidate cannot know in advance
        generator = torch.Generator().manual_seed(secrets.randbits(63))
    return torch.randint(0, n, (SAMPLE_ELEMS,), generator=generator)


def low_bits_finding(
    got: list, expected: list, generator: torch.Generator | None = None
) -> str | None:
    """Whether some float32 output is stored at lower precision than its fp32 reference: over
    its nonzero finite elements (at least `MIN_ELEMS`; `SAMPLE_ELEMS` of a larger output), more
    than `CANDIDATE_SHARE` carry one common pattern of `LOW_BITS` low mantissa bits where less
    than `REFERENCE_SHARE` of the reference's do. A message, or None."""
    for j, (g, e) in enumerate(zip(got, expected)):
        if not (isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)):
            continue
        if g.dtype != torch.float32 or e.dtype != torch.float32 or g.shape != e.shape:
            continue
        index = _sample(g.numel(), generator)
        gm = _mantissas(g, index)[_keep(g, index)]
        em = _mantissas(e, index)[_keep(e, index)]
        if gm.numel() < MIN_ELEMS or em.numel() < MIN_ELEMS:
            continue
        share, ref_share = common_share(gm), common_share(em)
        if share <= CANDIDATE_SHARE or ref_share >= REFERENCE_SHARE:
            continue
        return (
            f"output {j} carries at most {significant_bits(gm, share)} significant mantissa bits where "
            f"the reference carries {significant_bits(em)}: {share:.0%} of {gm.numel()} nonzero "
            f"elements share one pattern of their {LOW_BITS} lowest mantissa bits (all zero for "
            f"a rounded store), the reference's {ref_share:.1%}: outputs stored at lower "
            "precision than the problem's fp32 (rounded, or through bf16/fp16); store the fp32 "
            "result as computed"
        )
    return None
