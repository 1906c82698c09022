"""Issue 17: the size guard estimates the interpreter's time from each launch's grid. A launch
whose estimate passes the limit is refused at once (status `resource`, a message naming the
grid, programs, estimate and what to do) instead of running for minutes; a long launch below
it logs progress lines; a normal kernel is unaffected."""

from __future__ import annotations

import time

import pytest

from tools.core.problem import read_problem
from tools.job.size_guard import (
    FLOOR_S_PER_PROGRAM,
    LAUNCH_LIMIT_S,
    LaunchBudget,
    TooSlowForInterpreter,
)

PROBLEM = """import torch
import torch.nn as nn

N = {n}


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double_kernel(x_ptr, y_ptr, n, REPEAT: tl.constexpr):
    pid = tl.program_id(0)  # one element a program: the grid is the tensor's size
    acc = tl.load(x_ptr + pid) * 0.0
    for _ in range(REPEAT):  # busy work: each program costs REPEAT loads
        acc += tl.load(x_ptr + pid)
    tl.store(y_ptr + pid, acc * (2.0 / REPEAT))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _double_kernel[(x.numel(),)](x, y, x.numel(), REPEAT={repeat})
        return y
"""


class FakeClock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_a_grid_past_the_floor_is_refused_before_any_program_runs():
    budget = LaunchBudget(30.0, clock=FakeClock(0.0))
    programs = int(30.0 / FLOOR_S_PER_PROGRAM) * 2
    with pytest.raises(TooSlowForInterpreter):
        budget.new_launch((programs,), "_k")
    msg = budget.refused or ""
    for part in (f"{programs:,} programs", f"({programs}, 1, 1)", "_k", "GPU", "--allow-large"):
        assert part in msg, (part, msg)


def test_the_measured_cost_of_the_first_programs_refuses_a_slow_launch():
    budget = LaunchBudget(30.0, clock=FakeClock(0.01))  # 10 ms a program
    budget.new_launch((100, 100), "_k")  # 10,000 programs: 100 s
    with pytest.raises(TooSlowForInterpreter):
        for _ in range(10):
            budget.program()
    assert "~100 s" in (budget.refused or "")


def test_a_long_launch_under_the_limit_logs_progress_and_no_limit_never_refuses():
    lines: list[str] = []
    budget = LaunchBudget(None, clock=FakeClock(0.01), log=lines.append)
    budget.new_launch((1_000_000,), "_k")  # past the floor, but there is no limit
    for _ in range(3000):
        budget.program()
    assert budget.refused is None
    assert "1,000,000 programs" in lines[0] and "estimated" in lines[0]
    assert any("programs," in ln and "left" in ln for ln in lines[1:])
    quiet: list[str] = []
    small = LaunchBudget(LAUNCH_LIMIT_S, clock=FakeClock(0.001), log=quiet.append)
    small.new_launch((13,), "_k")
    for _ in range(13):
        small.program()
    assert small.refused is None and quiet == []


@pytest.mark.parametrize(
    "n, repeat",
    [
        pytest.param(1 << 20, 1, id="refused-at-the-launch"),  # 1M programs: past the floor
        pytest.param(16384, 200, id="refused-on-measured-cost"),  # 200 loads a program
    ],
)
def test_a_huge_grid_is_refused_quickly_with_a_clear_message(tmp_path, cpu_verifier, n, repeat):
    problem = tmp_path / "double.py"
    problem.write_text(PROBLEM.format(n=n))
    t0 = time.monotonic()
    v = cpu_verifier.verify(read_problem(problem), KERNEL.format(repeat=repeat), "k.py")
    took = time.monotonic() - t0
    assert v.status == "resource", v.feedback()
    assert f"{n:,} programs" in v.message and "_double_kernel" in v.message
    assert "--allow-large" in v.message and "GPU" in v.message
    assert took < 25, took  # the job's timeout is 30 s: it ran for minutes before


def test_a_small_kernel_is_unaffected(tmp_path, cpu_verifier):
    problem = tmp_path / "double.py"
    problem.write_text(PROBLEM.format(n=64))
    v = cpu_verifier.verify(read_problem(problem), KERNEL.format(repeat=1), "k.py")
    assert v.status == "ok", v.feedback()


def test_allow_large_on_the_command_line_lifts_the_launch_limit_in_the_jobs(monkeypatch, tmp_path):
    import os

    from agent.cli import main
    from tools.job.size_guard import ALLOW_LARGE_ENV, allow_large

    monkeypatch.setenv(ALLOW_LARGE_ENV, "0")  # recorded, so the test leaves it as it was
    assert not allow_large()
    missing = str(tmp_path / "missing.py")
    assert main(["verify", missing, missing, "--allow-large"]) == 2  # set before any work
    assert os.environ.get(ALLOW_LARGE_ENV) == "1" and allow_large()
    assert LaunchBudget(None).limit_s is None


def test_allow_large_through_the_python_api_reaches_the_candidates_job(tmp_path):
    """VerifyOptions(allow_large=True) alone lifts the per-launch limit (it used to reach only
    the CLI's environment): the 1M-program launch then runs until the job's timeout."""
    from tools.orchestrate.verify import Verifier, VerifyOptions

    problem = tmp_path / "double.py"
    problem.write_text(PROBLEM.format(n=1 << 20))
    verifier = Verifier(VerifyOptions(trials=1, timeout_s=6, device="cpu", allow_large=True))
    v = verifier.verify(read_problem(problem), KERNEL.format(repeat=1), "k.py")
    assert v.status == "timeout", v.feedback()
