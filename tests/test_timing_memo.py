"""Timing that a memo cannot fool (issue 34; docs/profiling.md, "Inputs never repeat").

A kernel that fingerprints its inputs and returns a cached output on a repeat (a token launch
keeps "a Triton launch ran" true) looked fast when every timed call saw the same inputs. The
timer now writes new values into the inputs before every timed call (`tools.checks.timing.Freshness`)
and runs the freshness check as one of the timed calls, at a repetition drawn at random.

Timing is GPU-only: on the CPU the real `Timer` loop runs with CUDA's events, synchronisation
and spin kernel replaced by stand-ins (`fake_cuda`). The memo's launches are Triton kernels
where Triton can run them (a GPU, or the interpreter: `test_with_interpreted_triton_kernels`
runs the scenarios in a process started with TRITON_INTERPRET=1); in this process on a CPU
they are their PyTorch equivalents, which changes nothing the timer sees. The `gpu` tests time
for real."""

from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from tests.helpers import cpu_timer
from tools.checks.freshness import fill_fresh, fresh_finding, fresh_moments, refresher
from tools.checks.timing import Freshness, Timer

BLOCK = 1024


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def _launch(kernel, src: torch.Tensor, dst: torch.Tensor) -> None:
    if not INTERPRETED and not src.is_cuda:  # (triton imported here without the interpreter)
        dst.copy_(src.clamp_min(0) if kernel is _relu_kernel else src)
        return
    n = src.numel()
    kernel[(triton.cdiv(n, BLOCK),)](src, dst, n, BLOCK=BLOCK)


class ContentMemo:
    """ReLU that fingerprints its input's bytes and, on a repeat, copies the cached output out
    with a token launch instead of computing (the red team's memo, issue 34)."""

    def __init__(self) -> None:
        self.cache: dict[str, torch.Tensor] = {}
        self.hits = self.computed = 0

    def __call__(self, args: list) -> torch.Tensor:
        (x,) = args
        key = hashlib.sha1(x.detach().cpu().numpy().tobytes()).hexdigest()
        y = torch.empty_like(x)
        if key in self.cache:
            self.hits += 1
            _launch(_copy_kernel, self.cache[key], y)  # "a Triton launch ran"
        else:
            self.computed += 1
            _launch(_relu_kernel, x, y)
            self.cache[key] = y.clone()
        return y


class AddressMemo:
    """ReLU computed once per input address, returned from its cache afterwards (stale on new
    values in the same buffer)."""

    def __init__(self) -> None:
        self.cache: dict[int, torch.Tensor] = {}

    def __call__(self, args: list) -> torch.Tensor:
        (x,) = args
        if x.data_ptr() not in self.cache:
            y = torch.empty_like(x)
            _launch(_relu_kernel, x, y)
            self.cache[x.data_ptr()] = y
        return self.cache[x.data_ptr()]


def honest(args: list) -> torch.Tensor:
    (x,) = args
    y = torch.empty_like(x)
    _launch(_relu_kernel, x, y)
    return y


class _Event:
    def __init__(self, **kw) -> None:
        pass

    def record(self) -> None:
        pass

    def elapsed_time(self, other) -> float:
        return 0.01


@pytest.fixture
def fake_cuda(monkeypatch):
    """The real Timer loop on the CPU: events, synchronisation and the spin kernel stand-ins."""
    return lambda: cpu_timer(monkeypatch, _Event)


def _inputs(n: int = 3000) -> list:
    torch.manual_seed(0)
    return [torch.randn(n)]


def _timed(timer: Timer, call, sets: list[list]) -> list[str]:
    """Run the timer's measure; return the fingerprint of the inputs of every call it made that
    was timed (the sequences), in order."""
    seen: list[tuple[bool, str]] = []
    run = timer._run

    def spy(call_, sets_, reps, pad, armed=False):
        def recording(args):
            seen.append((True, hashlib.sha1(args[0].numpy().tobytes()).hexdigest()))
            return call_(args)

        return run(recording, sets_, reps, pad, armed)

    timer._run = spy
    timer.measure(call, sets)
    return [fp for timed, fp in seen if timed]


def test_timed_calls_never_see_the_same_inputs_twice(fake_cuda):
    sets = [_inputs()]
    timer = fake_cuda()
    timer.fresh = Freshness(refresh=refresher(fresh_moments(sets[0])))
    prints = _timed(timer, honest, sets)
    assert len(prints) >= 25 and len(set(prints)) == len(prints)


def test_control_without_freshness_every_timed_call_repeats(fake_cuda):
    sets = [_inputs()]
    prints = _timed(fake_cuda(), honest, sets)
    assert len(set(prints)) == 1


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "control"])
def test_content_memo_never_hits_a_timed_call(fake_cuda, fresh):
    """With new values before every timed call the memo computes on every timed call; without
    them (the control) every timed call was a cache hit."""
    sets = [_inputs()]
    timer = fake_cuda()
    if fresh:
        timer.fresh = Freshness(refresh=refresher(fresh_moments(sets[0])))
    memo = ContentMemo()
    timed = {"hits": 0, "calls": 0}
    run = timer._run

    def counted(call, sets_, reps, pad, armed=False):
        def one(args):
            before = memo.hits
            out = call(args)
            timed["calls"] += 1
            timed["hits"] += memo.hits - before
            return out

        return run(one, sets_, reps, pad, armed)

    timer._run = counted
    timer.measure(memo, sets)
    assert timed["calls"] >= 25
    if fresh:
        assert timed["hits"] == 0
    else:
        assert timed["hits"] == timed["calls"]


def _probe_for(sets: list[list], seed: int = 12345) -> Freshness:
    """The job's set-up: the check's values and their reference made before the candidate
    runs (here `torch.relu` is the reference)."""
    moments = fresh_moments(sets[0])
    check = [x.clone() for x in sets[0]]
    fill_fresh(check, seed, moments)
    expected = [torch.relu(check[0])]

    def probe(bufs: list) -> None:
        fill_fresh(bufs, seed, moments)

    return Freshness(
        refresh=refresher(moments),
        probe=probe,
        check=lambda out: fresh_finding(out, expected, 1e-5, 1e-5, during_timing=True),
    )


def test_address_memo_fails_the_check_made_during_the_timing(fake_cuda):
    sets = [_inputs()]
    timer = fake_cuda()
    timer.fresh = _probe_for(sets)
    timer.measure(AddressMemo(), sets)
    finding = timer.fresh.finding
    assert finding is not None and finding["checked"] and not finding["ok"]
    assert "during the timing" in finding["message"]


def test_honest_kernel_passes_the_check_made_during_the_timing(fake_cuda):
    sets = [_inputs()]
    timer = fake_cuda()
    timer.fresh = _probe_for(sets)
    timer.measure(honest, sets)
    assert timer.fresh.finding == {
        "checked": True,
        "ok": True,
        "message": "output follows new values in the same buffers",
    }
    assert 0 <= timer.fresh.probe_rep < 20


def test_the_probed_call_is_drawn_at_random():
    """A kernel cannot count its way to the check: the probed repetition varies."""
    drawn = set()
    for _ in range(40):
        f = Freshness(refresh=lambda b: None, probe=lambda b: None, check=lambda o: {})
        f.arm(100)
        drawn.add(f.probe_at)
    assert len(drawn) > 10 and all(0 <= d < 100 for d in drawn)


def test_a_kernel_stale_on_most_timed_calls_is_caught(fake_cuda):
    """To move the median a kernel must skip the work on over half the timed calls; the probe
    lands on one of those as often. This one recomputes on every third call only (stale on 2 of
    3 timed calls): of 30 timings at least 10 are caught (fewer: p < 1e-4)."""
    caught = 0
    for _ in range(30):
        sets = [_inputs(1000)]
        timer = fake_cuda()
        timer.fresh = _probe_for(sets)
        state: dict = {"n": 0, "y": None}

        def lazy(args, state=state):
            state["n"] += 1
            if state["y"] is None or state["n"] % 3 == 0:
                state["y"] = honest(args)
            return state["y"]

        timer.measure(lazy, sets)
        caught += not timer.fresh.finding["ok"]
    assert caught >= 10, caught


def test_with_interpreted_triton_kernels(tmp_path):
    """The memo tests above, their launches real Triton kernels under the interpreter."""
    if INTERPRETED:
        pytest.skip("Triton kernels already run in this process")
    from tests.helpers import ROOT

    names = [
        "test_content_memo_never_hits_a_timed_call",
        "test_address_memo_fails_the_check_made_during_the_timing",
        "test_honest_kernel_passes_the_check_made_during_the_timing",
    ]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", __file__]
        + ["-k", " or ".join(names)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "4 passed" in proc.stdout, proc.stdout[-2000:]


# ---------------------------------------------------------------------------------- GPU


def _gpu_timer() -> Timer:
    return Timer(50 << 20, warmup_ms=10, rep_ms=50, min_reps=20, max_reps=200)


@pytest.mark.gpu
def test_gpu_content_memo_is_timed_at_the_honest_speed():
    """On the GPU: a memo keyed on the inputs' contents (its hits skip a 4096^3 GEMM) times
    about as the GEMM does once inputs never repeat; the control shows how fast it looked."""
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    cache: dict[float, torch.Tensor] = {}

    def memo(args):
        key = float(args[0].view(-1)[:4096].sum())  # a host fingerprint: one sync, ~20 us
        if key not in cache:
            cache[key] = args[0] @ b
        return cache[key].clone()

    def gemm(args):
        return args[0] @ b

    timer = _gpu_timer()
    looked = statistics.median(timer.measure(memo, [[a]]))
    real = statistics.median(timer.measure(gemm, [[a]]))
    timer.fresh = Freshness(refresh=refresher(fresh_moments([a])))
    cache.clear()
    fresh = statistics.median(timer.measure(memo, [[a]]))
    assert looked < 0.5 * real, (looked, real)
    assert fresh > 0.8 * real, (fresh, real)


@pytest.mark.gpu
def test_gpu_address_memo_fails_the_timed_check():
    torch.manual_seed(0)
    sets = [[torch.randn(1 << 20, device="cuda")]]
    timer = _gpu_timer()
    timer.fresh = _probe_for(sets)
    cache: dict[int, torch.Tensor] = {}

    def stale(args):
        x = args[0]
        if x.data_ptr() not in cache:
            cache[x.data_ptr()] = torch.relu(x)
        return cache[x.data_ptr()]

    timer.measure(stale, sets)
    assert timer.fresh.finding is not None and not timer.fresh.finding["ok"]
