"""Issue 37: one timer. `tools.checks.timing.Timer` times kernels three ways, each a method of
it: the profile's (`measure`: padded events, an L2 flush and new input values before every
call), KernelBench's method reproduced so its numbers sit beside ours (`kernelbench`), and the
draft's quick pick among variants (`fastest_ms`: the fastest of a short `do_bench`). No other
module of the library times a kernel with `do_bench`; the draft's pickers default to the
timer's mode.

Timing is GPU-only: on the CPU the Timer runs with CUDA's events and synchronisation replaced by
stand-ins (`tests.helpers.cpu_timer`) that write down what the timer did, in order."""

from __future__ import annotations

import ast
import inspect
import statistics

import pytest
import torch

from tests.helpers import ROOT, cpu_timer
from tools.checks.timing import KERNELBENCH_TRIALS, KERNELBENCH_WARMUP, Freshness, Timer

TRACE: list[str] = []


class _TracingEvent:
    """A CUDA event stand-in on a clock that only the timed call moves (by the next of
    `_TracingEvent.steps`): each sample is exactly what the call added."""

    clock = 0.0
    steps: list[float] = []

    def __init__(self, **kw) -> None:
        self.t = 0.0

    def record(self) -> None:
        TRACE.append("record")
        self.t = _TracingEvent.clock

    def elapsed_time(self, other) -> float:
        return other.t - self.t


def _call(args: list) -> torch.Tensor:
    TRACE.append("call")
    _TracingEvent.clock += _TracingEvent.steps.pop(0) if _TracingEvent.steps else 0.0
    return args[0].clamp_min(0)


class _NoFlush:
    def zero_(self) -> None:
        raise AssertionError("the KernelBench method flushes no L2")


@pytest.fixture
def timer(monkeypatch):
    t = cpu_timer(monkeypatch, _TracingEvent)
    _TracingEvent.clock, _TracingEvent.steps = 0.0, []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: TRACE.append("sync"))
    TRACE.clear()
    return t


def test_kernelbench_is_a_mode_of_the_timer(timer):
    """KernelBench's method, as `src/eval.py` times: `warmup` synchronised calls, then `trials`
    calls each between two events and followed by a synchronise; the same inputs every trial
    (the timer's new values and L2 flush are not its method); mean, population std, min, max."""
    steps = [float(i % 7) + 0.5 for i in range(KERNELBENCH_WARMUP + KERNELBENCH_TRIALS)]
    _TracingEvent.steps = list(steps)
    args = [torch.randn(64)]
    timer.cache = _NoFlush()
    timer.fresh = Freshness(refresh=lambda a: pytest.fail("KernelBench repeats its inputs"))

    stats = timer.kernelbench(_call, args)

    trials = steps[KERNELBENCH_WARMUP:]
    assert TRACE == ["call", "sync"] * KERNELBENCH_WARMUP + [
        "record", "call", "record", "sync"
    ] * KERNELBENCH_TRIALS  # fmt: skip
    assert stats == {
        "mean": statistics.fmean(trials),
        "std": statistics.pstdev(trials),
        "min": min(trials),
        "max": max(trials),
        "num_trials": KERNELBENCH_TRIALS,
        "warmup": KERNELBENCH_WARMUP,
    }


def test_the_kernelbench_counts_are_keywords(timer):
    stats = timer.kernelbench(_call, [torch.randn(8)], warmup=1, trials=4)
    assert (stats["warmup"], stats["num_trials"]) == (1, 4)
    assert TRACE.count("call") == 5


def test_the_draft_pick_is_a_mode_of_the_timer(monkeypatch):
    """The draft's method: the minimum of `do_bench`'s repetitions (10 ms warm-up, 40 ms of
    repetitions; do_bench flushes the L2 before each), what the pickers time by default."""
    import triton.testing

    from tools.draft import conv_epilogue, conv_picks, gemm_tiles, launch_configs, sized

    seen = []

    def do_bench(fn, **kw):
        fn()
        seen.append(kw)
        return 0.25 * len(seen)

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    calls = []
    assert Timer.fastest_ms(lambda: calls.append(1)) == 0.25
    assert seen == [{"warmup": 10, "rep": 40, "return_mode": "min"}] and calls == [1]
    pickers = [
        launch_configs.pick_configs,
        conv_epilogue.pick_conv_epilogues,
        conv_picks.pick_conv_variants,
        gemm_tiles.pick_tiles,
        sized.pick_sized_path,
    ]
    for picker in pickers:
        assert inspect.signature(picker).parameters["timer"].default is Timer.fastest_ms, picker


def _do_bench_uses(path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        n.lineno for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and n.id == "do_bench")
        or (isinstance(n, ast.Attribute) and n.attr == "do_bench")
        or (isinstance(n, ast.alias) and n.name.split(".")[-1] == "do_bench")
    ]  # fmt: skip


def test_only_the_timer_times_with_do_bench():
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "tools").rglob("*.py"))
        if (lines := _do_bench_uses(p))
    }
    assert set(found) == {"tools/checks/timing.py"}, found


def test_the_finder_sees_do_bench(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(
        "import triton.testing\nfrom triton.testing import do_bench\n"
        "t = triton.testing.do_bench(f)\ns = 'do_bench'\n"
    )
    assert _do_bench_uses(path) == [2, 3]
