"""The timing job's freshness check holds the fp64 rule's cap (issue 35), as the judge does.

The judge caps the elements its fp64 rule may excuse in an output (`tools.checks.fp64_rule.excuse_cap`:
PyTorch's own draws' misses plus 8). The timing job (`tools.job.profile_worker`) made the rule's
fp64 reference and allowance for its freshness check but no cap, so a kernel with 3x PyTorch's
error everywhere on a cancelling sum, refused by the verifier, passed the freshness check
(within the allowance at every element). The kernel here errs 0.95 times the allowance (2.85x
PyTorch's largest error over the draws) at every element, on the side away from PyTorch's
own value. Here the job's own steps run on the CPU: the
references made before the candidate loads (`_fresh_references`), then the probe on a timed
call (`_fresh_probe`) and the check after the timing (`_freshness_after_timing`)."""

from __future__ import annotations

import pytest
import torch

from tests.test_allowance_rule import _blocked_fp32, _graded, _RowSum
from tools.checks.compare import fp64_accepted
from tools.checks.freshness import host_originals
from tools.checks.timing import Freshness
from tools.job.profile_worker import _fresh_probe, _fresh_references, _freshness_after_timing

TOL = (1e-4, 1e-4)


@pytest.fixture(scope="module")
def job():
    """The job's freshness references on a sum whose rows cancel 10 to 1000 times: the values
    `write_fresh` writes are that sum's inputs (the job's own draw would not cancel)."""
    values = _graded(4, rows=512, cols=1024)
    bufs = [torch.zeros_like(values)]

    def write_fresh(b):
        b[0].copy_(values)

    originals = host_originals([bufs[0].clone()], bufs)
    refs = _fresh_references(_RowSum(), bufs, originals, write_fresh, 7, {"fp64_rule": True}, TOL)
    return values, bufs, write_fresh, refs[1:]


def test_the_job_makes_a_cap_per_output_from_its_draws(job):
    _, _, _, (ref, ref64, allow, caps) = job
    assert len(ref) == len(ref64) == len(allow) == len(caps) == 1
    assert isinstance(caps[0], int) and caps[0] >= 8


def _edge(ref, ref64, allow):
    """0.95 of the allowance from the fp64 value at every element, away from PyTorch's fp32
    value: within the per-element rule and the fp32 claim (8x), less accurate than fp32."""
    r64, e = ref64[0], ref[0].double()
    side = torch.where(e >= r64, -1.0, 1.0).double()
    return (r64 + 0.95 * allow[0].double() * side).float()


def test_less_accurate_than_fp32_everywhere_is_refused_by_the_cap_on_a_timed_call(job):
    values, _, _, refs = job
    ref, ref64, allow, caps = refs
    edge = _edge(ref, ref64, allow)
    n, _ = fp64_accepted(edge, ref[0], ref64[0], *TOL, allowance64=allow[0])
    assert n > caps[0], (n, caps)  # the rule would excuse more than the cap
    uncapped = _fresh_probe((ref, ref64, allow, None), *TOL)(edge)
    assert uncapped["ok"]  # what the job's check said before it had the cap
    found = _fresh_probe(refs, *TOL)(edge)
    assert not found["ok"] and "over its cap of" in found["message"]  # raised by `reach`
    assert "during the timing" in found["message"]
    honest = _fresh_probe(refs, *TOL)(_blocked_fp32(values))
    assert honest["ok"], honest["message"]


def test_the_check_after_the_timing_holds_the_cap_too(job):
    values, bufs, write_fresh, refs = job
    ref, ref64, allow, caps = refs
    edge = _edge(ref, ref64, allow)

    def memo_free(out):
        return lambda args: out.clone()

    fresh = Freshness(refresh=lambda b: None)  # no probe ran (a stochastic problem's path)
    found = _freshness_after_timing(fresh, memo_free(edge), bufs, write_fresh, refs, *TOL)
    assert not found["ok"] and "over its cap of" in found["message"]  # raised by `reach`
    assert "after the timing" in found["message"]
    ok = _freshness_after_timing(
        fresh, memo_free(_blocked_fp32(values)), bufs, write_fresh, refs, *TOL
    )
    assert ok["ok"], ok["message"]
