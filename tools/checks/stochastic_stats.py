"""The tests of a stochastic problem's trial (tests a-d of `tools.checks.stochastic`) on the runs
that `tools.checks.stochastic_runs` kept: `judge_trial` on one output's runs, `judge_single`
for a trial with one candidate run, the permutation tests with their limits, and the messages
that explain a failure. Pure functions of tensors (the judge job and the timing job call them).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from typing import Any

import torch

from tools.checks.stochastic_runs import OutputSpec, Side

PERMUTATIONS = 500
"""Relabellings of the 2N runs that make the permutation tests' null distribution."""
ALPHA = 1e-6
"""Nominal false-reject probability of each permutation test on a trial: a 2-D output gets 10
(4 on its elements and projections, 2 per projection group: whole, along dim 0, along dim 1),
so 5 documented trials make 5e-5 a verification."""
Z_ONE_SIDED = 4.7534
"""The standard normal's 1 - ALPHA quantile."""
Z_TWO_SIDED = 4.8916
"""The standard normal's 1 - ALPHA/2 quantile."""
Z_MAX = 10.0
"""Largest per-element Welch z allowed. A t with 62 degrees of freedom exceeds 10 with
probability 1.5e-14: 2.5e-7 over `ELEMENT_MAX` elements (a union bound: it holds whatever the
dependence). Bernoulli-like elements (dropout with 32 runs a side) cannot reach it: their z is at
most sqrt(31 k / (32 - k)) with k the drops of one side where the other kept all, 8 needs k >= 22."""
FLOOR_DIV = 64.0
"""Per-element numerical floor of the standard errors: (atol + rtol |mean|) / FLOOR_DIV. Keeps
fp32 rounding differences (reduction orders) from reading as significant where the randomness
itself is that small; it is 1/64 of the tolerance the deterministic protocol allows."""
TERM_CAP = 100.0
"""Cap on one element's term of the mean statistics (z^2): an element whose variance happened
to be 0 in one side's runs cannot dominate the average."""
LOG_CAP = 5.0
"""Cap on |log variance ratio| of one element or projection."""
EFFECT_MIN = 1e-3
"""A permutation test rejects only when its statistic is also at least this large (a mean
squared z, a mean or mean square log variance ratio): where the numerical floors dominate, every
statistic is rounding noise near 0 and its permutation distribution says nothing."""
STALE_FACTOR = 8.0
"""A single-run (unannounced) trial's candidate output fails when its distance to the
reference's runs exceeds this many times the largest of the reference runs' own distances (the
same leave-one-out distance, 33 exchangeable values). Worst case, every element driven by one
draw (`x * rand(1)`): the distances are F(1, 30)-like and an honest run exceeds 8x the largest
of 32 with probability 7.8e-6 (4x: 3.1e-4). A stale output (made for other inputs) sits at the
cap, `TERM_CAP`."""


@dataclass
class Finding:
    """The result of one trial's tests on one output."""

    ok: bool
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def judge_trial(ref: Side, cand: Side, atol: float, rtol: float, output: int = 0) -> Finding:
    """Tests a-d of one output over one trial's runs (`cand.n` >= 2; a single run goes to
    `judge_single`)."""
    n_r, n_c = ref.n, cand.n
    spec = ref.spec
    where = f"output {output}"
    excluded = ref.nonfinite
    new_bad = cand.nonfinite & ~excluded
    if bool(new_bad.any()):
        i = int(new_bad.nonzero()[0])
        return Finding(
            False,
            f"{where}: {int(new_bad.sum())} element(s) were NaN/Inf in some of the candidate's "
            f"{n_c} runs where all {n_r} reference runs were finite (first at flat index "
            f"{_flat(spec, i)})",
        )
    m_r, m_c = ref.mean, cand.mean
    v_r, v_c = ref.var(), cand.var()
    tol = atol + rtol * m_r.abs()
    floor2 = (tol / FLOOR_DIV) ** 2
    # (a, deterministic elements) the same value in every run of both sides: the tolerance
    det = (ref.m2 == 0) & (cand.m2 == 0) & ~excluded
    bad_det = det & ((m_c - m_r).abs() > tol)
    if bool(bad_det.any()):
        i = int(bad_det.nonzero()[0])
        return Finding(
            False,
            f"{where}: {int(bad_det.sum())} of {int(det.sum())} element(s) that did not vary in "
            f"any run of either side differ beyond atol={atol:g}/rtol={rtol:g} (first at flat "
            f"index {_flat(spec, i)}: got {float(m_c[i]):.6g}, expected {float(m_r[i]):.6g})",
        )
    stats: dict[str, Any] = {"runs": [n_r, n_c], "elements": spec.n_sel}
    # (d) repeats
    distinct_r = _distinct(ref.proj)
    distinct_c = _distinct(cand.proj)
    stats["distinct_runs"] = [distinct_r, distinct_c]
    if distinct_r == n_r and distinct_c <= n_c // 2:
        return Finding(
            False,
            f"{where}: only {distinct_c} distinct output(s) in the candidate's {n_c} runs on the "
            f"same inputs, where all {n_r} of the reference's differ: the randomness repeats "
            "(a fixed seed, a seed that does not change between calls, or none at all)",
            stats,
        )
    # (a) per-element means: the largest Welch z
    stoch = ~det & ~excluded
    if bool(stoch.any()):
        z = (m_c - m_r).abs() / torch.sqrt(v_r / n_r + v_c / n_c + floor2)
        z = torch.where(stoch, z, torch.zeros_like(z))
        i = int(z.argmax())
        stats["max_z"] = round(float(z[i]), 3)
        if float(z[i]) > Z_MAX:
            return Finding(
                False,
                f"{where}: the mean over {n_c} runs differs from the reference's at flat index "
                f"{_flat(spec, i)} by {float(z[i]):.1f} standard errors (limit {Z_MAX:g}): got "
                f"{float(m_c[i]):.6g} (sd {math.sqrt(float(v_c[i])):.3g}), expected "
                f"{float(m_r[i]):.6g} (sd {math.sqrt(float(v_r[i])):.3g})",
                stats,
            )
    # (a, b, c) permutation tests
    fs = floor2[spec.sample_pos].cpu() if spec.n_sel else torch.zeros(0, dtype=torch.float64)
    xr, xc = torch.stack(ref.samples), torch.stack(cand.samples)
    finite = torch.isfinite(xr).all(0) & torch.isfinite(xc).all(0)
    proj_floor2 = _projection_floor2(spec, floor2)
    tests = permutation_tests(
        xr[:, finite],
        xc[:, finite],
        fs[finite],
        torch.stack(ref.proj),
        torch.stack(cand.proj),
        proj_floor2,
        groups=spec.groups(),
    )
    stats["tests"] = {k: v for k, v in tests.items()}
    failed = [k for k, v in tests.items() if v.get("reject")]
    if failed:
        return Finding(False, f"{where}: " + _explain(failed[0], tests[failed[0]], n_c), stats)
    return Finding(True, "", stats)


def judge_single(ref: Side, cand: Side, atol: float, rtol: float, output: int = 0) -> Finding:
    """A trial with one candidate run (an unannounced trial): its distance to the reference's
    runs, leave-one-out, against the reference runs' own distances (a stale output, made for
    other inputs, is far from all of them)."""
    spec = ref.spec
    where = f"output {output}"
    new_bad = cand.nonfinite & ~ref.nonfinite
    if bool(new_bad.any()):
        i = int(new_bad.nonzero()[0])
        return Finding(
            False,
            f"{where}: {int(new_bad.sum())} element(s) are NaN/Inf where all {ref.n} reference "
            f"runs were finite (first at flat index {_flat(spec, i)})",
        )
    floor2 = ((atol + rtol * ref.mean.abs()) / FLOOR_DIV) ** 2
    fs = floor2[spec.sample_pos].cpu()
    x = torch.cat([torch.stack(ref.samples), torch.stack(cand.samples)])
    finite = torch.isfinite(x).all(0)
    d_s = _loo_distance(x[:, finite], fs[finite])
    p = torch.cat([torch.stack(ref.proj), torch.stack(cand.proj)])
    d_p = _loo_distance(p, _projection_floor2(spec, floor2))
    stats: dict[str, Any] = {"runs": [ref.n, 1]}
    for name, d in (("elements", d_s), ("projections", d_p)):
        if d is None:
            continue
        worst_ref, got = float(d[:-1].max()), float(d[-1])
        stats[f"distance_{name}"] = [round(got, 3), round(worst_ref, 3)]
        if got > STALE_FACTOR * max(worst_ref, 1.0):
            return Finding(
                False,
                f"{where}: the output is {got:.3g} (mean squared standard errors, {name}) from "
                f"the reference's {ref.n} runs on these inputs, where none of those runs is "
                f"farther than {worst_ref:.3g} from the others (limit {STALE_FACTOR:g}x): not a "
                "draw of the reference's distribution (a stale or wrong output)",
                stats,
            )
    return Finding(True, "", stats)


def _loo_distance(x: torch.Tensor, floor2: torch.Tensor) -> torch.Tensor | None:
    """Per run (row), the mean over columns of its squared distance to the other rows' mean in
    units of their variance (capped per column): exchangeable rows give exchangeable values."""
    n = x.shape[0]
    if x.shape[1] == 0 or n < 4:
        return None
    x = x - x.mean(0)
    s, q = x.sum(0), (x * x).sum(0)
    m = (s - x) / (n - 1)
    v = ((q - x * x) - (n - 1) * m * m) / (n - 2)
    terms = ((x - m) ** 2 / (v.clamp(min=0) + floor2)).clamp(max=TERM_CAP)
    live = (x.amax(0) - x.amin(0)) > 0
    if not bool(live.any()):
        return None
    return terms[:, live].mean(1)


def permutation_tests(
    xr: torch.Tensor,
    xc: torch.Tensor,
    floor2: torch.Tensor,
    pr: torch.Tensor,
    pc: torch.Tensor,
    proj_floor2: torch.Tensor,
    *,
    groups: dict[str, list[int]] | None = None,
    permutations: int = PERMUTATIONS,
    seed: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Tests a-c against the permutation distribution. `xr`/`xc`: runs x sampled elements;
    `pr`/`pc`: runs x projections; floors are squared numerical floors per column; `groups`:
    the projections tested together (name -> columns; all of them in one group by default).
    Returns, per test, the observed value, the limit and whether it rejects."""
    n_r, n_c = xr.shape[0], xc.shape[0]
    g = torch.Generator().manual_seed(secrets.randbits(62) if seed is None else seed)
    labels = torch.zeros(permutations + 1, n_r + n_c, dtype=torch.float64)
    labels[0, n_r:] = 1.0
    for b in range(1, permutations + 1):
        labels[b, torch.randperm(n_r + n_c, generator=g)[:n_c]] = 1.0
    out: dict[str, dict[str, Any]] = {}
    el = _group_stats(torch.cat([xr, xc]), labels, floor2)
    if el is not None:
        d2, lr = el
        out["mean"] = _positive(d2.mean(1))
        out["variance"] = _signed(lr.mean(1))
        out["variance_spread"] = _positive((lr * lr).mean(1))
    p = torch.cat([pr, pc])
    pj = _group_stats(p, labels, proj_floor2)
    if pj is not None:
        out["projection_mean"] = _positive(pj[0].mean(1))
    for name, cols in (groups or {"all": list(range(p.shape[1]))}).items():
        pj = _group_stats(p[:, cols], labels, proj_floor2[cols])
        if pj is not None:
            lr = pj[1]
            out[f"projection_variance[{name}]"] = _signed(lr.mean(1))
            out[f"projection_variance_spread[{name}]"] = _positive((lr * lr).mean(1))
    return out


def _group_stats(
    x: torch.Tensor, labels: torch.Tensor, floor2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Per labelling (rows of `labels`: 1 = group A) and column of `x`: the capped squared
    Welch z of the two groups' means and the capped log ratio of their variances (A over B).
    Columns that are constant over all runs are left out; None if all are."""
    live = (x.amax(0) - x.amin(0)) > 0
    if not bool(live.any()):
        return None
    x, floor2 = x[:, live], floor2[live]
    x = x - x.mean(0)
    n = x.shape[0]
    n_a = labels.sum(1, keepdim=True)
    n_b = n - n_a
    s_a, q_a = labels @ x, labels @ (x * x)
    s_b, q_b = x.sum(0) - s_a, (x * x).sum(0) - q_a
    m_a, m_b = s_a / n_a, s_b / n_b
    v_a = ((q_a - s_a * m_a) / (n_a - 1)).clamp(min=0)
    v_b = ((q_b - s_b * m_b) / (n_b - 1)).clamp(min=0)
    d2 = ((m_a - m_b) ** 2 / (v_a / n_a + v_b / n_b + floor2)).clamp(max=TERM_CAP)
    lr = torch.log((v_a + floor2) / (v_b + floor2)).clamp(-LOG_CAP, LOG_CAP)
    return d2, lr


def _positive(t: torch.Tensor) -> dict[str, Any]:
    """A statistic that grows under the alternative: its limit is the 1 - ALPHA quantile of a
    scaled chi-square matched to the permutation distribution's mean and variance."""
    obs, null = float(t[0]), t[1:]
    mu, var = float(null.mean()), float(null.var())
    if mu <= 0 or var <= 0:
        return {"value": obs, "limit": None, "reject": False}
    scale, dof = var / (2 * mu), 2 * mu * mu / var
    limit = scale * _chi2_quantile(dof, Z_ONE_SIDED)
    return {
        "value": round(obs, 6),
        "limit": round(limit, 6),
        "reject": obs > max(limit, EFFECT_MIN),
    }


def _signed(t: torch.Tensor) -> dict[str, Any]:
    """A statistic that moves either way under the alternative: standardised against the
    permutation distribution, two-sided normal limit."""
    obs, null = float(t[0]), t[1:]
    mu, sd = float(null.mean()), float(null.std())
    if sd <= 0:
        return {"value": obs, "limit": None, "reject": False}
    z = (obs - mu) / sd
    reject = abs(z) > Z_TWO_SIDED and abs(obs) > EFFECT_MIN
    return {"value": round(obs, 6), "z": round(z, 3), "limit": Z_TWO_SIDED, "reject": reject}


def _chi2_quantile(dof: float, z: float) -> float:
    """Wilson-Hilferty: the chi-square quantile with `dof` degrees of freedom at the normal
    quantile `z` (conservative for small `dof`: 27.4 against the exact 23.9 at dof 1, 1e-6)."""
    c = 2.0 / (9.0 * dof)
    return dof * max(1.0 - c + z * math.sqrt(c), 0.0) ** 3


def _projection_floor2(spec: OutputSpec, floor2: torch.Tensor) -> torch.Tensor:
    """Squared numerical floor of each projection: the elements' floors summed in quadrature,
    times the number of elements sharing one weight (errors along a summed dimension may add
    up)."""
    scale = float(floor2.mean()) * spec.numel if floor2.numel() else 0.0
    return torch.tensor([scale * p.group for p in spec.projections], dtype=torch.float64)


def _distinct(proj: list[torch.Tensor]) -> int:
    if not proj:
        return 0
    return int(torch.unique(torch.stack(proj), dim=0).shape[0])


def _flat(spec: OutputSpec, i: int) -> int:
    return i if spec.sel is None else int(spec.sel[i])


_EXPLAIN = {
    "mean": "the per-element means differ from the reference's beyond chance (mean squared "
    "Welch z {value:.3g}, limit {limit:.3g} from the permutation distribution): a wrong "
    "scaling (dropout without 1/(1-p)?) or a wrong value",
    "variance": "the per-element variances differ systematically from the reference's "
    "(candidate/reference {ratio:.3g} on average, {z:.1f} permutation sd, limit {limit:.2f}): a "
    "wrong probability or scaling, or randomness missing",
    "variance_spread": "the per-element variances differ from the reference's beyond chance "
    "(mean squared log ratio {value:.3g}, limit {limit:.3g})",
    "projection_mean": "sums of the output with fixed random signs have other means than the "
    "reference's (mean squared Welch z {value:.3g}, limit {limit:.3g})",
    "projection_variance": "sums of the output with fixed random signs vary {ratio:.3g}x as much "
    "as the reference's across runs ({z:.1f} permutation sd, limit {limit:.2f}): the random "
    "draws are dependent where the reference's are not (one mask for every row, a mask "
    "repeating), or the other way round",
    "projection_variance_spread": "sums of the output with fixed random signs vary differently from the reference's across runs (mean squared log "
    "ratio {value:.3g}, limit {limit:.3g}): dependence between elements (one mask for every row "
    "or column, a mask repeating) that the reference does not have",
}


def _explain(test: str, result: dict[str, Any], runs: int) -> str:
    group = ""
    if "[" in test:
        test, group = test.split("[", 1)
        group = group.rstrip("]")
    value = float(result.get("value") or 0.0)
    args = {
        "value": value,
        "limit": float(result.get("limit") or 0.0),
        "z": float(result.get("z") or 0.0),
        "ratio": math.exp(value) if "variance" in test else 0.0,
    }
    text = _EXPLAIN[test].format(**args)
    if group:
        text = text.replace("sums of the output", f"sums of the output ({group})", 1)
    return (
        f"over {runs} runs on the same inputs, {text}. The reference is "
        "stochastic and was judged statistically"
    )
