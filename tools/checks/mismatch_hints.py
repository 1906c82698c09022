"""The words of a mismatch's pattern hint: a guess at the cause an LLM can act on (the tail
block masked off, an output never written, a row reduction off by a constant). `pattern_hint`
reads whole tensors; `tools.checks.compare` builds the same words from per-chunk counts for outputs too
large for whole float64 copies."""

from __future__ import annotations

import torch

HINT_NEVER_WRITTEN = (
    "every element is NaN (the harness fills fresh allocations with NaN): "
    "the output was never written"
)
HINT_ALL_ZEROS = (
    "the output is all zeros: it was probably never written (or written to another buffer)"
)
HINT_FORMULA = "wrong almost everywhere: check the formula itself, not just the masks"


def hint_tail(first: int) -> str:
    return (
        f"elements from flat index {first} to the end are wrong while the first {first} are "
        "right: the grid does not cover the whole output, or the last (partial) block is "
        "masked off; check the grid size and the mask `offsets < n_elements`"
    )


def hint_nan_blocks(nan_count: int) -> str:
    return (
        f"{nan_count} elements are NaN (never written: fresh allocations are filled with "
        "NaN): some blocks or rows are not stored; check the grid and the store mask"
    )


def hint_scattered(bad_count: int, n: int) -> str:
    return f"{bad_count} of {n} elements wrong, scattered: check indexing and strides"


def pattern_hint(g: torch.Tensor, e: torch.Tensor, bad: torch.Tensor) -> str:
    """A guess at the cause, in words an LLM can act on (whole tensors, any device)."""
    n = g.numel()
    flat_bad = bad.reshape(-1)
    nan_g = torch.isnan(g).reshape(-1)
    if n and bool(nan_g.all()) and not bool(torch.isnan(e).any()):
        return HINT_NEVER_WRITTEN
    if n and bool((g == 0).all()) and not bool((e == 0).all()):
        return HINT_ALL_ZEROS
    if bool(flat_bad.all()):
        if e.dim() >= 1 and e.shape[-1] > 1 and n > e.shape[-1]:
            rows_g = g.reshape(-1, e.shape[-1])
            rows_e = e.reshape(-1, e.shape[-1])
            off = rows_g - rows_e
            spread = (off.max(dim=1).values - off.min(dim=1).values).abs()
            if bool((spread <= 1e-3 * (1 + rows_e.abs().max())).all()):
                return (
                    "every row is off by a constant: check the row reduction "
                    "(max subtraction, sum, mean or the normaliser)"
                )
            ratio = rows_g / rows_e
            if bool(torch.isfinite(ratio).all()):
                rspread = ratio.max(dim=1).values - ratio.min(dim=1).values
                if bool((rspread.abs() <= 1e-3).all()):
                    return (
                        "every row is off by a constant factor: check the normalisation "
                        "(the sum / norm used to divide)"
                    )
        return HINT_FORMULA
    bad_idx = flat_bad.nonzero().reshape(-1)
    first, last = int(bad_idx[0]), int(bad_idx[-1])
    if last == n - 1 and int(bad_idx.numel()) == n - first:
        if first == 0:
            return "wrong almost everywhere"
        return hint_tail(first)
    if nan_g.any() and bool((flat_bad == nan_g).all()):
        return hint_nan_blocks(int(nan_g.sum()))
    if e.dim() >= 2:
        cols = e.shape[-1]
        bad2 = bad.reshape(-1, cols)
        bad_cols = bad2.any(dim=0)
        bad_rows = bad2.any(dim=1)
        if bool(bad_cols.any()) and not bool(bad_cols.all()):
            c0 = int(bad_cols.nonzero()[0])
            if bool(bad_cols[c0:].all()):
                return (
                    f"columns {c0}..{cols - 1} are wrong in the affected rows: the last block of "
                    "each row is mishandled; check the column mask for the last partial block"
                )
        if bool(bad_rows.any()) and not bool(bad_rows.all()):
            rows = bad_rows.nonzero().reshape(-1).tolist()
            shown = ", ".join(map(str, rows[:8])) + (" ..." if len(rows) > 8 else "")
            return f"only some rows are wrong ({len(rows)} of {bad2.shape[0]}: {shown}): check the row indexing / program ids"
    return hint_scattered(int(bad_idx.numel()), n)
