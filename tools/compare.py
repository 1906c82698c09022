"""Compare candidate outputs with reference outputs (agent-process side, on plain CPU tensors).

Tolerances are per dtype (fp32 1e-4, half types 1e-2) unless overridden; the `kernelbench-v0`
preset is 1e-2 for everything, as in KernelBench's first release.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tools.errors import BadInputError
from tools.results import MismatchReport

DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-6, 1e-6),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}
PRESETS = {"default": None, "kernelbench-v0": (1e-2, 1e-2)}


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


def compare_outputs(
    got: list[torch.Tensor],
    expected: list[torch.Tensor],
    tol: Tolerance,
    *,
    trial: int,
    run: str = "first",
) -> Difference:
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
    for i, (g, e) in enumerate(zip(got, expected)):
        atol, rtol = tol.for_dtype(e.dtype)
        report = mismatch_report(g, e, atol, rtol, output_index=i, trial=trial, run=run)
        if report is not None:
            return Difference(kind="value", message=summarise(report), report=report)
    return Difference(kind="ok")


def mismatch_report(
    got: torch.Tensor,
    expected: torch.Tensor,
    atol: float,
    rtol: float,
    *,
    output_index: int = 0,
    trial: int = 0,
    run: str = "first",
) -> MismatchReport | None:
    """None when `got` matches; otherwise where and how it differs."""
    g = got.detach().to("cpu")
    e = expected.detach().to("cpu")
    if not (e.is_floating_point() or e.is_complex()):
        bad = g != e
        gf, ef = g.double(), e.double()
    else:
        gf, ef = g.double(), e.double()
        both_nan = torch.isnan(gf) & torch.isnan(ef)
        close = (gf - ef).abs() <= atol + rtol * ef.abs()
        both_inf = torch.isinf(gf) & torch.isinf(ef) & (torch.sign(gf) == torch.sign(ef))
        bad = ~(close | both_nan | both_inf)
    bad_count = int(bad.sum())
    if bad_count == 0:
        return None
    diff = (gf - ef).abs()
    finite = torch.isfinite(diff)
    max_abs = float(diff[finite].max()) if finite.any() else float("inf")
    mean_abs = float(diff[finite].mean()) if finite.any() else float("inf")
    rel = diff / ef.abs().clamp_min(1e-12)
    rel_finite = torch.isfinite(rel)
    max_rel = float(rel[rel_finite].max()) if rel_finite.any() else float("inf")
    idx = bad.nonzero()[:5].tolist()
    first_bad = []
    for ix in idx:
        first_bad.append({"index": ix, "got": _num(gf[tuple(ix)]), "expected": _num(ef[tuple(ix)])})
    report = MismatchReport(
        output_index=output_index,
        trial=trial,
        shape=list(g.shape),
        dtype=str(e.dtype).replace("torch.", ""),
        atol=atol,
        rtol=rtol,
        max_abs_err=max_abs,
        mean_abs_err=mean_abs,
        max_rel_err=max_rel,
        bad_count=bad_count,
        numel=g.numel(),
        first_bad=first_bad,
        nan_count=int(torch.isnan(gf).sum()) if g.is_floating_point() else 0,
        inf_count=int(torch.isinf(gf).sum()) if g.is_floating_point() else 0,
        expected_nan_count=int(torch.isnan(ef).sum()) if e.is_floating_point() else 0,
        run=run,
    )
    report.hint = pattern_hint(gf, ef, bad)
    return report


def _num(x: torch.Tensor) -> float | int | str:
    v = x.item()
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return str(v)
    return v


def pattern_hint(g: torch.Tensor, e: torch.Tensor, bad: torch.Tensor) -> str:
    """A guess at the cause, in words an LLM can act on."""
    n = g.numel()
    flat_bad = bad.reshape(-1)
    nan_g = torch.isnan(g).reshape(-1)
    if n and bool(nan_g.all()) and not bool(torch.isnan(e).any()):
        return (
            "every element is NaN (the harness fills fresh allocations with NaN): "
            "the output was never written"
        )
    if n and bool((g == 0).all()) and not bool((e == 0).all()):
        return (
            "the output is all zeros: it was probably never written (or written to another buffer)"
        )
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
        return "wrong almost everywhere: check the formula itself, not just the masks"
    bad_idx = flat_bad.nonzero().reshape(-1)
    first, last = int(bad_idx[0]), int(bad_idx[-1])
    if last == n - 1 and int(bad_idx.numel()) == n - first:
        if first == 0:
            return "wrong almost everywhere"
        return (
            f"elements from flat index {first} to the end are wrong while the first {first} are "
            "right: the grid does not cover the whole output, or the last (partial) block is "
            "masked off; check the grid size and the mask `offsets < n_elements`"
        )
    if nan_g.any() and bool((flat_bad == nan_g).all()):
        return (
            f"{int(nan_g.sum())} elements are NaN (never written: fresh allocations are filled with "
            "NaN): some blocks or rows are not stored; check the grid and the store mask"
        )
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
    return f"{int(bad_idx.numel())} of {n} elements wrong, scattered: check indexing and strides"


def summarise(r: MismatchReport) -> str:
    where = ", ".join(
        f"{b['index']}: got {b['got']}, expected {b['expected']}" for b in r.first_bad[:3]
    )
    nan = f", {r.nan_count} NaN" if r.nan_count else ""
    inf = f", {r.inf_count} Inf" if r.inf_count else ""
    return (
        f"output {r.output_index} (trial {r.trial}, {r.run} run): {r.bad_count} of {r.numel} "
        f"elements outside atol={r.atol:g}/rtol={r.rtol:g}{nan}{inf}; max abs err "
        f"{r.max_abs_err:.3g}, mean abs err {r.mean_abs_err:.3g}, max rel err {r.max_rel_err:.3g}. "
        f"First bad: {where}. Hint: {r.hint}"
    )


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
