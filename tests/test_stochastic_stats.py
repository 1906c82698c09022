"""The statistics of a stochastic problem's verification (`tools.checks.stochastic`), in-process on
PyTorch stand-ins for kernels, and the timing job's statistical freshness check. The end-to-end
path (jobs, Triton kernels) is `tests/test_stochastic_verify.py`; false-reject rates and power
are measured by `benchmarks/stochastic_calibration.py`, not here."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tools.checks.freshness import fill_fresh, host_originals
from tools.checks.stochastic import (
    FRESH_RUNS,
    STOCHASTIC_RUNS,
    StochasticTrial,
    fresh_check,
    reference_trial_on_fresh,
)


class _Dropout(torch.nn.Module):
    """The reference: dropout in training mode (torch's global RNG)."""

    def forward(self, x):
        return F.dropout(x, 0.5, True)


def _own_dropout(gen: torch.Generator):
    """An honest stand-in for a kernel: the same distribution from a stream of its own."""

    def run(x):
        return x * (torch.rand(x.shape, generator=gen) >= 0.5) / 0.5

    return run


def _trial(reference, candidate, x, cand_runs=STOCHASTIC_RUNS):
    trial = StochasticTrial(reference(x), "cpu")
    for _ in range(STOCHASTIC_RUNS):
        trial.add_reference(reference(x))
    for _ in range(cand_runs):
        trial.add_candidate(candidate(x))
    return trial.finish([(1e-4, 1e-4)] * len(trial.specs))


def test_an_honest_stand_in_passes_and_a_stale_single_run_does_not():
    x = torch.rand(16, 32)
    gen = torch.Generator().manual_seed(3)

    def reference(t):
        return [F.dropout(t, 0.5, True)]

    def honest(t):
        return [_own_dropout(gen)(t)]

    assert _trial(reference, honest, x).ok
    assert _trial(reference, honest, x, cand_runs=1).ok
    other = torch.rand(16, 32)  # an output made for other inputs (a stale result)
    stale = _trial(reference, lambda t: [_own_dropout(gen)(other)], x, cand_runs=1)
    assert not stale.ok and "not a draw" in stale.message


def test_deterministic_elements_are_held_to_the_tolerance():
    """Output 1 does not vary: compared with the tolerance, not statistically."""
    x = torch.rand(8, 8)
    gen = torch.Generator().manual_seed(4)

    def reference(t):
        return [F.dropout(t, 0.5, True), t * 2]

    def off_by_a_bit(t):
        return [_own_dropout(gen)(t), t * 2 + 1e-3]

    finding = _trial(reference, off_by_a_bit, x)
    assert not finding.ok
    assert "did not vary" in finding.message and "output 1" in finding.message
    assert _trial(reference, lambda t: [_own_dropout(gen)(t), t * 2], x).ok


def test_nan_where_the_reference_is_finite_is_rejected():
    x = torch.rand(8, 8)
    gen = torch.Generator().manual_seed(5)

    def nan_once(t):
        y = _own_dropout(gen)(t)
        y[0, 0] = float("nan")
        return [y]

    finding = _trial(lambda t: [F.dropout(t, 0.5, True)], nan_once, x)
    assert not finding.ok and "NaN/Inf" in finding.message


def test_fresh_check_of_a_stochastic_problem_is_statistical():
    """The timing job's freshness check: the reference's runs on fresh values in the very
    buffers, the originals restored; an honest candidate passes, one that returns its result
    for the values it was timed on (a cache keyed by address) fails."""
    x = torch.rand(32, 32)
    bufs = [x]
    originals = host_originals([x.clone()], bufs)
    before = x.clone()

    def fill(b):
        fill_fresh(b, 11)

    trial = reference_trial_on_fresh(_Dropout(), bufs, originals, fill)
    assert torch.equal(x, before)  # the timed values are back
    assert trial.ref[0].n == FRESH_RUNS
    gen = torch.Generator().manual_seed(6)
    honest = fresh_check(lambda b: _own_dropout(gen)(b[0]), bufs, fill, trial, 1e-4, 1e-4)
    assert honest["ok"] and honest["statistical"], honest

    x.copy_(before)
    trial = reference_trial_on_fresh(_Dropout(), bufs, originals, fill)
    cached = _own_dropout(gen)(before)  # what it computed while being timed
    stale = fresh_check(lambda b: cached.clone(), bufs, fill, trial, 1e-4, 1e-4)
    assert not stale["ok"] and "new values" in stale["message"]
