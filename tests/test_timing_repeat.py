"""The timing job's repeat check (`tools.timing.time_repeats`): a candidate faster on input
values it has already seen is refused. On the H200 (session 16) the corpus's two memos decided
on the device (`matmul__memo_device_flag`, `matmul__memo_device_loop_bound`) verify `ok`: their
outputs are right on every input, and a GPU has no count of the work inside a launch. They only
pay where calls repeat their inputs (KernelBench's timer).

On the CPU the real `Timer` loop runs with CUDA's events replaced by stand-ins that read the
host clock, so a candidate that sleeps when it computes is timed as a slow kernel."""

from __future__ import annotations

import time

import pytest
import torch

from tests.helpers import cpu_timer
from tools.freshness import fresh_moments, refresher
from tools.timing import REPEAT_RATIO, repeat_finding, time_repeats


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
