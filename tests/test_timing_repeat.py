"""The timing job's repeat check (`tools.checks.timing.time_repeats`): a candidate faster on input
values it has already seen is refused. On the H200 (session 16) the corpus's two memos decided
on the device (`matmul__memo_device_flag`, `matmul__memo_device_loop_bound`) verify `ok`: their
outputs are right on every input, and a GPU has no count of the work inside a launch. They only
pay where calls repeat their inputs (KernelBench's timer).

On the CPU the real `Timer` loop runs with CUDA's events replaced by stand-ins that read the
host clock, so a candidate that sleeps when it computes is timed as a slow kernel.

The hardware itself can be faster on repeated values (session 17, H200: an honest fp16
convolution 0.79x on repeats, refused before): the candidate's ratio is judged against the
reference's, timed the same two ways (`tools.checks.timing.reference_repeats`)."""

from __future__ import annotations

import time

import pytest
import torch

from tests.helpers import cpu_timer
from tools.checks.freshness import fresh_moments, refresher
from tools.checks.timing import REPEAT_RATIO, reference_repeats, repeat_finding, time_repeats


class _ClockEvent:
    def __init__(self, **kw) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, other) -> float:
        return (other.t - self.t) * 1000.0


@pytest.fixture
def timer(monkeypatch):
    return cpu_timer(monkeypatch, _ClockEvent)


WORK_S = 0.003  # what "computing" costs the stand-in kernels


class PreviousCallMemo:
    """Computes (sleeps) unless its input holds the previous call's values: then it returns the
    product it kept, at no cost (the device-flag memo, in the host's terms)."""

    def __init__(self) -> None:
        self.last: torch.Tensor | None = None
        self.kept: torch.Tensor | None = None

    def __call__(self, args: list) -> torch.Tensor:
        (x,) = args
        if self.last is not None and torch.equal(x, self.last):
            return self.kept.clone()
        time.sleep(WORK_S)
        self.last, self.kept = x.clone(), x.clamp_min(0)
        return self.kept.clone()


def honest(args: list) -> torch.Tensor:
    time.sleep(WORK_S)
    return args[0].clamp_min(0)


def _args() -> list:
    torch.manual_seed(0)
    return [torch.randn(4096)]


def test_a_memo_on_the_previous_call_s_values_is_refused(timer):
    args = _args()
    finding = time_repeats(timer, PreviousCallMemo(), args, refresher(fresh_moments(args)), 3.0)
    assert finding["checked"] and not finding["ok"], finding
    assert finding["repeated_ms"] < REPEAT_RATIO * finding["fresh_ms"]
    assert "already seen" in finding["message"]


def test_an_honest_candidate_passes(timer):
    args = _args()
    finding = time_repeats(timer, honest, args, refresher(fresh_moments(args)), 3.0)
    assert finding["ok"], finding
    assert timer.fresh is None  # the timer is left as it was found


def test_the_thresholds():
    assert not repeat_finding([1.0] * 9, [0.5] * 9)["ok"]
    assert repeat_finding([1.0] * 9, [0.9] * 9)["ok"]  # within the ratio
    # launch-latency sized: a difference under the floor is noise, whatever the ratio
    assert repeat_finding([0.0015] * 9, [0.0005] * 9)["ok"]


class DataDependentDevice:
    """A stand-in device whose every kernel, the reference's included, runs faster when its
    operands are the previous call's (fewer bits toggled, higher clocks): `REPEAT_SPEED` of the
    time. Not a memo: every call computes."""

    REPEAT_SPEED = 0.7

    def __init__(self) -> None:
        self.last: torch.Tensor | None = None

    def run(self, x: torch.Tensor) -> torch.Tensor:
        same = self.last is not None and torch.equal(x, self.last)
        time.sleep(WORK_S * (self.REPEAT_SPEED if same else 1.0))
        self.last = x.clone()
        return x.clamp_min(0)


def test_an_honest_candidate_on_hardware_faster_on_repeats_passes(timer):
    """The reference is as much faster on repeats as the honest candidate: not a memo."""
    args = _args()
    refresh = refresher(fresh_moments(args))
    reference = DataDependentDevice()
    ref = reference_repeats(timer, lambda a: reference.run(a[0]), args, refresh)
    assert ref["ratio"] < REPEAT_RATIO, ref  # the stand-in hardware is faster on repeats
    device = DataDependentDevice()
    finding = time_repeats(timer, lambda a: device.run(a[0]), args, refresh, 3.0, ref)
    assert finding["ratio"] < REPEAT_RATIO, finding  # refused on the absolute ratio alone
    assert finding["ok"], finding
    assert finding["reference"] == ref and "the reference" in finding["message"]
    assert timer.fresh is None


def test_a_memo_is_refused_on_hardware_faster_on_repeats(timer):
    args = _args()
    refresh = refresher(fresh_moments(args))
    reference = DataDependentDevice()
    ref = reference_repeats(timer, lambda a: reference.run(a[0]), args, refresh)
    finding = time_repeats(timer, PreviousCallMemo(), args, refresh, 3.0, ref)
    assert not finding["ok"], finding
    assert "already seen" in finding["message"] and "the reference" in finding["message"]


def test_the_thresholds_against_the_reference():
    same = {"fresh_ms": 1.0, "repeated_ms": 0.75, "ratio": 0.75}
    assert repeat_finding([1.0] * 9, [0.75] * 9, same)["ok"]  # as fast on repeats as eager
    assert not repeat_finding([1.0] * 9, [0.75] * 9)["ok"]  # no reference: the absolute bar
    assert not repeat_finding([1.0] * 9, [0.5] * 9, same)["ok"]  # under 0.8 of eager's ratio
    slower = {"fresh_ms": 1.0, "repeated_ms": 1.3, "ratio": 1.3}
    # eager slower on repeats does not raise the bar past the absolute one
    assert repeat_finding([1.0] * 9, [0.85] * 9, slower)["ok"]
    assert not repeat_finding([1.0] * 9, [0.75] * 9, slower)["ok"]
