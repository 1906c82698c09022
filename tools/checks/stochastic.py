"""Statistical verification of a stochastic reference: a `Model.forward` that draws from torch's
RNG (dropout in training mode, `rand_like`, `bernoulli`, ...).

A Triton kernel cannot reproduce PyTorch's random stream, so no output of it can be compared
value by value with such a reference. It is judged on distributions instead: per trial (fixed
inputs), the judge runs the reference `STOCHASTIC_RUNS` times under RNG states of its own and
receives as many outputs of the candidate; per output it keeps, for each side
(`tools.checks.stochastic_runs`),

- per-element running means and variances (Welford, float64, in chunks; over at most
  `ELEMENT_MAX` elements, a random subset beyond that),
- every run's values at `SAMPLE_ELEMS` random elements (the permutation tests),
- every run's random projections: signed sums with fixed random +-1 weights drawn by the judge,
  over the whole output, over the output summed along each dimension (dependence along that
  dimension: one mask for every row), and the plain total.

and then tests (`tools.checks.stochastic_stats.judge_trial`; docs/verification.md, "Stochastic problems",
has the false-reject figures):

a. means: per element a Welch z; the largest must stay under `Z_MAX`, and the mean of z^2 over
   the sampled elements must not exceed its permutation distribution; elements that varied in
   neither side's runs are compared with the ordinary tolerance instead;
b. variances: the mean (and the mean square) of the per-element log variance ratio against its
   permutation distribution;
c. dependence: the same two on the projections' variances across runs (an F-type test), and
   their means;
d. repeats: a candidate whose runs repeat (identical outputs) where the reference's did not.

The permutation tests are two-sample tests whose null distribution comes from relabelling the
2N runs (exchangeable when the candidate samples the reference's distribution), so they hold
whatever the dependence between elements; the tail beyond the permutations is a moment-matched
scaled chi-square (positive statistics) or a normal (signed ones) at `ALPHA` a test.

This module holds the trial of several outputs (`StochasticTrial`) and the timing job's
freshness check (`fresh_check`). Nothing here runs the candidate: the judge
(`tools.job.stochastic_judge`) and the timing job call it with tensors.
"""

from __future__ import annotations

import secrets
from typing import Any

import torch

from tools.checks.stochastic_runs import OutputSpec, Side
from tools.checks.stochastic_stats import Finding, judge_single, judge_trial

STOCHASTIC_RUNS = 32
"""Forwards of each side (reference, candidate) per trial of a stochastic problem. At 32, the
per-element Welch z is close to a t with 62 degrees of freedom, a variance ratio of 0.64 (dropout
without its 1/(1-p) scaling) is 2.5 standard errors on one element and far more over a few
hundred, and a trial costs 64 forwards (16 times a deterministic trial's 4)."""


class StochasticTrial:
    """One trial's statistics for every output; the judge feeds runs in, then asks `finish`."""

    def __init__(self, expected: list[torch.Tensor], device: str) -> None:
        self.specs = [OutputSpec(tuple(e.shape), device) for e in expected]
        self.expected = [(tuple(e.shape), e.dtype) for e in expected]
        self.ref = [Side(s, device) for s in self.specs]
        self.cand = [Side(s, device) for s in self.specs]

    def add_reference(self, outputs: list[torch.Tensor]) -> None:
        for side, o in zip(self.ref, outputs, strict=True):
            side.add(o)

    def check_shapes(self, outputs: list[Any]) -> str | None:
        """Why a candidate run's outputs cannot be compared, or None."""
        if len(outputs) != len(self.expected):
            return f"returned {len(outputs)} output(s), the reference returns {len(self.expected)}"
        for j, (o, (shape, dtype)) in enumerate(zip(outputs, self.expected, strict=True)):
            if not isinstance(o, torch.Tensor):
                return f"output {j} is a {type(o).__name__}, not a tensor"
            if tuple(o.shape) != shape:
                return f"output {j} has shape {list(o.shape)}, expected {list(shape)}"
            if o.dtype != dtype:
                return f"output {j} has dtype {o.dtype}, expected {dtype}"
        return None

    def add_candidate(self, outputs: list[torch.Tensor]) -> None:
        for side, o in zip(self.cand, outputs, strict=True):
            side.add(o)

    def finish(self, tolerances: list[tuple[float, float]]) -> Finding:
        stats = []
        for j, (r, c) in enumerate(zip(self.ref, self.cand, strict=True)):
            atol, rtol = tolerances[j]
            f = (judge_trial if c.n >= 2 else judge_single)(r, c, atol, rtol, output=j)
            stats.append(f.stats)
            if not f.ok:
                return Finding(False, f.message, {"outputs": stats})
        return Finding(True, "", {"outputs": stats})


# ------------------------------------------------------------------------------------------
# The timing job's freshness check for a stochastic problem

FRESH_RUNS = 16
"""Runs of each side in the timing job's freshness check of a stochastic problem: the same tests
as a verification trial, on fewer runs (the permutation tests hold at any number of runs; fewer
runs only lower their power)."""


def reference_trial_on_fresh(model: torch.nn.Module, inputs: list, originals: list, fill) -> Any:
    """The reference's `FRESH_RUNS` runs on the new values `fill` writes into `inputs`' own
    buffers, folded into a `StochasticTrial` (no output kept); the floating-point inputs then get
    their values back from `originals`. Called before the candidate's code is loaded."""
    from tools.checks.compare import normalise_outputs
    from tools.job.job_common import _sync

    fill(inputs)
    trial: StochasticTrial | None = None
    with torch.no_grad():
        for _ in range(FRESH_RUNS):
            torch.manual_seed(secrets.randbits(62))
            out = [o for o in normalise_outputs(model(*inputs))]
            if trial is None:
                trial = StochasticTrial(out, str(out[0].device) if out else "cpu")
            trial.add_reference(out)
            del out
    for x, original in zip(inputs, originals, strict=True):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x.copy_(original)
    _sync()
    return trial


def fresh_check(call, bufs: list, fill, trial: StochasticTrial, atol: float, rtol: float) -> dict:
    """The freshness check of a stochastic problem: new values written into the very buffers the
    candidate was timed on, `FRESH_RUNS` candidate runs on them, and the verification's tests
    against the reference's runs on the same values (`reference_trial_on_fresh`). A result cached
    by the input's address is far from them (test a)."""
    from tools.checks.compare import normalise_outputs
    from tools.job.job_common import _sync

    fill(bufs)
    _sync()
    for _ in range(FRESH_RUNS):
        got = normalise_outputs(call(bufs))
        _sync()
        why = trial.check_shapes(got)
        if why:
            return {"checked": True, "ok": False, "message": f"on new input values: {why}"}
        trial.add_candidate(got)
        del got
    finding = trial.finish([(atol, rtol)] * len(trial.specs))
    if not finding.ok:
        return {
            "checked": True,
            "ok": False,
            "statistical": True,
            "message": "after new values were written into the same input buffers, "
            f"{FRESH_RUNS} runs do not follow the reference's distribution: {finding.message}",
        }
    return {
        "checked": True,
        "ok": True,
        "statistical": True,
        "message": f"output follows new values in the same buffers (stochastic problem: "
        f"{FRESH_RUNS} runs each side, judged statistically)",
    }
