"""The chunked passes behind `tools.checks.compare`: outputs cut into flat runs of at most a
chunk of elements (`Pieces`), the elements outside the tolerance per chunk (`bad_mask`,
`bad_counts`), and a wrong output's statistics gathered chunk by chunk (`tally`, `Tally`) with
the hint words they allow (`tally_hint`). Extra memory follows the chunk, not the output. Runs
where the comparison runs: in the judge's job, and in the candidate's own jobs (the worker's
checks, the timing job's freshness check), so `tools.checks.integrity` checks it as it checks
`compare`."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from tools.checks.fp64_rule import cancelling, no_farther_from_fp64
from tools.checks.mismatch_hints import (
    HINT_ALL_ZEROS,
    HINT_FORMULA,
    HINT_NEVER_WRITTEN,
    hint_nan_blocks,
    hint_scattered,
    hint_tail,
)


def is_floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def bad_mask(
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


class Pieces:
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


def bad_counts(
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
    floating = is_floating(expected)
    pieces = Pieces(got, expected, chunk_elems, reference64, allowance64)
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
        counts[i] = bad_mask(gc, ec, atol, rtol, floating, rc, ac).sum()
    return counts.tolist()


@dataclass
class Tally:
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


def tally(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    counts: list[int],
    chunk_elems: int,
    reference64: torch.Tensor | None = None,
    allowance64: torch.Tensor | None = None,
) -> Tally:
    """The second pass, over a wrong output; `counts` (bad elements per chunk) says which chunks
    hold the first bad elements."""
    floating = is_floating(expected)
    shape = tuple(got.shape)
    # Accumulated on the device, in place: counts, then the sum and maxima of finite errors.
    ints = torch.zeros(9, dtype=torch.int64, device=got.device)
    floats = torch.zeros(3, dtype=torch.float64, device=got.device)
    first_bad: list[dict[str, Any]] = []
    first_bad_flat = -1
    pieces = Pieces(got, expected, chunk_elems, reference64, allowance64)
    for (start, gc, ec, rc, ac), count in zip(pieces, counts):
        bad = bad_mask(gc, ec, atol, rtol, floating, rc, ac)
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
                        "index": unravel(start + k, shape),
                        "got": _num(gf[k]),
                        "expected": _num(ef[k]),
                    }
                )
    i, f = ints.tolist(), floats.tolist()
    return Tally(
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


def unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
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


def tally_hint(t: Tally, bad_count: int, n: int) -> str:
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
