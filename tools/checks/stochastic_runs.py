"""What a stochastic problem's verification keeps of each run (the judge job and the timing job
call it with tensors; nothing here runs the candidate).

Per output, the judge draws from its own secret randomness which elements to follow and which
projections to take (`OutputSpec`); each side's runs (`Side`) are folded into per-element
running means and variances (Welford, float64, in chunks), every run's values at the sampled
elements, and every run's projections. The tests on them are `tools.checks.stochastic_stats`;
the trial that feeds both sides, `tools.checks.stochastic.StochasticTrial`.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

import torch

ELEMENT_MAX = 1 << 24
"""Per-element accumulators cover at most this many elements of an output (four float64 arrays
of it: 512 MiB); beyond it a random subset the judge draws."""
SAMPLE_ELEMS = 8192
"""Elements whose every run is kept (float64) for the permutation tests."""
SIGN_REPEATS = 4
"""Random +-1 weight vectors per projection group (the whole output; the output summed along one
dimension): each group is tested on its own, so a dependence along one dimension is not diluted
by the others."""
CHUNK = 1 << 20
"""Elements converted to float64 at a time."""


@dataclass
class _Projection:
    kind: str
    """`full` (signed sum over all elements), `along` (summed along `dim`, then signed), `sum`."""
    dim: int = -1
    seed: int = 0
    group: int = 1
    """Elements summed with one weight: the projection's numerical floor scales with it."""


class OutputSpec:
    """The elements and projections of one output, drawn by the judge from its own secret
    randomness (the candidate knows the trial's seed, so nothing here may follow from it)."""

    def __init__(self, shape: tuple[int, ...], device: str, seed: int | None = None) -> None:
        self.shape = tuple(shape)
        self.numel = math.prod(self.shape)
        seed = secrets.randbits(62) if seed is None else seed
        g = torch.Generator().manual_seed(seed)
        n = self.numel
        self.sel: torch.Tensor | None = None
        if n > ELEMENT_MAX:
            self.sel = torch.randint(0, n, (ELEMENT_MAX,), generator=g).unique().to(device)
        n_sel = n if self.sel is None else int(self.sel.numel())
        self.n_sel = n_sel
        if n_sel <= SAMPLE_ELEMS:
            pos = torch.arange(n_sel)
        else:
            pos = torch.randperm(n_sel, generator=g)[:SAMPLE_ELEMS].sort().values
        # positions in the selection, and the flat indices they stand for
        self.sample_pos = pos.to(device)
        self.sample_idx = self.sample_pos if self.sel is None else self.sel[self.sample_pos]
        proj: list[_Projection] = []
        for _ in range(SIGN_REPEATS):
            proj.append(_Projection("full", seed=int(torch.randint(0, 2**40, (1,), generator=g))))
        if len(self.shape) >= 2:
            for d, size in enumerate(self.shape):
                if size > 1:
                    for _ in range(SIGN_REPEATS):
                        s = int(torch.randint(0, 2**40, (1,), generator=g))
                        proj.append(_Projection("along", dim=d, seed=s, group=size))
        proj.append(_Projection("sum", group=max(n, 1)))
        self.projections = proj

    def groups(self) -> dict[str, list[int]]:
        """Projection columns by group: `whole` (signed sums of the output), `along dim D` (of the
        output summed along dimension D); the plain total is only in the mean test."""
        out: dict[str, list[int]] = {}
        for i, p in enumerate(self.projections):
            if p.kind == "full":
                out.setdefault("whole", []).append(i)
            elif p.kind == "along":
                out.setdefault(f"along dim {p.dim}", []).append(i)
        return out

    def project(self, t: torch.Tensor) -> torch.Tensor:
        """The output's projections (float64, one per `self.projections`)."""
        out = []
        for p in self.projections:
            if p.kind == "sum":
                out.append(torch.nan_to_num(t.detach().to(torch.float64), 0.0, 0.0, 0.0).sum())
            elif p.kind == "full":
                out.append(_signed_sum(t.detach().reshape(-1), p.seed))
            else:
                reduced = t.detach().sum(dim=p.dim, dtype=torch.float64).reshape(-1)
                out.append(_signed_sum(reduced, p.seed))
        return torch.stack([o.to(torch.float64).cpu() for o in out])


def _signed_sum(flat: torch.Tensor, seed: int) -> torch.Tensor:
    """sum(w * flat) with w a fixed +-1 vector of `seed`, made chunk by chunk (never stored)."""
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    g = torch.Generator(device=flat.device)
    for c, start in enumerate(range(0, flat.numel(), CHUNK)):
        x = flat[start : start + CHUNK].to(torch.float64)
        x = torch.nan_to_num(x, 0.0, 0.0, 0.0)
        g.manual_seed(seed + c)
        w = torch.randint(0, 2, (x.numel(),), generator=g, device=flat.device, dtype=torch.uint8)
        total += torch.where(w == 1, x, -x).sum()
    return total


# ------------------------------------------------------------------------------------------
# One side's runs


class Side:
    """One side's runs of one output in one trial: Welford moments, the sampled elements, the
    projections."""

    def __init__(self, spec: OutputSpec, device: str) -> None:
        self.spec = spec
        self.n = 0
        self.mean = torch.zeros(spec.n_sel, dtype=torch.float64, device=device)
        self.m2 = torch.zeros(spec.n_sel, dtype=torch.float64, device=device)
        self.nonfinite = torch.zeros(spec.n_sel, dtype=torch.bool, device=device)
        self.samples: list[torch.Tensor] = []
        self.proj: list[torch.Tensor] = []

    def add(self, t: torch.Tensor) -> None:
        flat = t.detach().reshape(-1)
        x = flat if self.spec.sel is None else flat[self.spec.sel]
        self.n += 1
        for start in range(0, x.numel(), CHUNK):
            sl = slice(start, start + CHUNK)
            c = x[sl].to(torch.float64)
            bad = ~torch.isfinite(c)
            if bool(bad.any()):
                self.nonfinite[sl] |= bad
                c = torch.where(bad, torch.zeros_like(c), c)
            delta = c - self.mean[sl]
            self.mean[sl] += delta / self.n
            self.m2[sl] += delta * (c - self.mean[sl])
        self.samples.append(flat[self.spec.sample_idx].to(torch.float64).cpu())
        self.proj.append(self.spec.project(t))

    def var(self) -> torch.Tensor:
        return self.m2 / max(self.n - 1, 1)
