"""The timing protocol, inside a timing job on a GPU (`tools.job.profile_worker`), and the one
`Timer` of the library: its `kernelbench` mode times KernelBench's way beside ours, its
`fastest_ms` mode is what a draft job's pickers time variants with (`tools.draft`).

Timing method ("padded events, checked against the profiler"): before each repetition the L2 is
flushed (a write over a buffer of twice its size) and the device synchronised; then a short spin
kernel (`torch.cuda._sleep`, 3x the call's measured host time) keeps the GPU busy while the host
records the start event and queues the call, so the sample is device time as if the host ran
ahead (as `do_bench` measures; the host's own time per call is returned separately as
`*_host_ms`); an event right after the call on the caller's stream ends the sample. That event misses work on a stream the caller's
stream does not wait for (a side stream), so the profiler's per-kernel device times (CUPTI sees
every stream) are checked against it (`uncounted_work`); when the kernels add up to more than
the timing, the candidate is re-timed without the pad until `torch.cuda.synchronize()` returns
(every stream, host launch cost included; the wake-up cost of that synchronize, measured on an
empty call, subtracted) and a note says so.
Why: the first H200 runs (session 2) timed from the start event to after the synchronize, with
no pad: the host's launch cost and the wake-up's jitter landed in every sample, and five profiles
of a 127 us ReLU kernel spread by 14%. Deciding "side stream" from the synchronize's end event
instead of the profiler flagged honest kernels (its wake-up cost grows with the wait).
Input sets (clones) are rotated when one set fits in L2. Returns raw samples; statistics are
computed by the caller.

Inputs never repeat (`Freshness`): before every timed call, outside the timed region, new values
are written into the floating-point inputs, so a kernel that fingerprints its inputs and returns
a cached output on a repeat (a token launch keeping "a Triton launch ran" true) never meets a
repeat, and one that caches by address returns a stale output. One call of each candidate
sequence, drawn at random once the sequence's length is known, gets the freshness check's values
instead and its outputs are judged right after it (docs/profiling.md, "Inputs never repeat").
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tools.checks.roofline import input_sets_for, repetitions
from tools.job.job_common import _clone

Call = Callable[[list], Any]


MAX_ROTATED_SET_BYTES = 256 << 20
"""Above this one input set is never cloned for rotation (KernelBench's sets reach 6.4 GB)."""


def input_sets(input_bytes: int, l2_bytes: int) -> int:
    """How many input sets the timing rotates over: `input_sets_for`'s answer, except one (the
    inputs themselves, no clone) for a set over 4x the L2 or over 256 MiB. Such a set cannot sit in
    the L2 anyway, and the L2 is flushed before every repetition."""
    if input_bytes > MAX_ROTATED_SET_BYTES or input_bytes > 4 * l2_bytes:
        return 1
    return input_sets_for(input_bytes, l2_bytes)


@dataclass(kw_only=True)
class Freshness:
    """What the timed calls run on (set as `Timer.fresh`). Before every timed call, outside the
    timed region (before the L2 flush), `refresh` writes new values into the call's inputs in
    place, drawn afresh each time: no timed call sees values any earlier call saw, so a result
    cached by the inputs' contents is never hit, and one cached by address is stale. While
    `check` is set and has no `finding` yet, one call of the next armed sequence (`arm`, at a
    repetition drawn with `secrets`) gets `probe` values instead (the freshness check's, whose
    reference was computed before the candidate was loaded), and `check(outputs)` judges that
    call's outputs right after it, outside the timed region: the check is a timed call like the
    others, not a call after the timing that a kernel could tell apart."""

    refresh: Callable[[list], None]
    probe: Callable[[list], None] | None = None
    check: Callable[[Any], dict[str, Any]] | None = None
    finding: dict[str, Any] | None = None
    """What `check` said of the probed call (None until one ran)."""
    probe_at: int = -1
    probe_rep: int | None = None
    """Which repetition of its sequence was probed (evidence)."""

    def arm(self, reps: int) -> None:
        """Draw the probed repetition of the next sequence of `reps` calls (once)."""
        if self.check is not None and self.probe is not None and self.finding is None:
            self.probe_at = secrets.randbelow(max(reps, 1))

    def before(self, i: int, args: list) -> None:
        """Before repetition `i`: the probe's values or new ones, into `args` in place."""
        if i == self.probe_at and self.probe is not None:
            self.probe(args)
        else:
            self.refresh(args)

    def after(self, i: int, outputs: Any) -> None:
        """After repetition `i` (its timing recorded): judge the probed call's outputs."""
        if i == self.probe_at and self.check is not None:
            self.probe_at, self.probe_rep = -1, i
            self.finding = self.check(outputs)


KERNELBENCH_WARMUP = 3
"""KernelBench's synchronised warm-up calls (`src/eval.py`)."""
KERNELBENCH_TRIALS = 100
"""KernelBench's timed trials."""


class Timer:
    """The library's one way to time a kernel, in three modes: `measure` (and `sequence`), the
    profile's padded event timing with an L2 flush before every repetition (see the module
    doc); `kernelbench`, KernelBench's method, for numbers beside KernelBench's; `fastest_ms`,
    the drafter's quick pick among variants (do_bench's minimum). `fresh`: new input values
    before every timed call of `measure` (`Freshness`); set it before timing anything that is
    compared, so that baselines and candidate are timed the same way."""

    def __init__(
        self, l2_bytes: int, *, warmup_ms: float, rep_ms: float, min_reps: int, max_reps: int
    ):
        # do_bench flushes 256 MB; H200's L2 is 50-60 MB, so 2x L2 is below that.
        n = max(256 << 20, 2 * l2_bytes)
        self.cache = torch.empty(n // 4, dtype=torch.int32, device="cuda")
        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.min_reps, self.max_reps = min_reps, max_reps
        self.cycles_per_us = _sleep_cycles_per_us()
        self.pad_us = 50.0
        self.last_host_ms = 0.0
        self.overhead_ms = 0.0
        self.fresh: Freshness | None = None
        self.overhead_ms = statistics.median(self._run(lambda args: None, [[]], 200, True)[1])

    def _run(self, call: Call, sets: list[list], reps: int, pad: bool, armed: bool = False):
        """`reps` timed calls rotating over `sets`, each on new input values (`fresh`; one of
        them the probe when `armed`). Per call: the time on the caller's stream (start event to
        an event queued right after the call) and the time until every stream is done (to an
        event after `torch.cuda.synchronize()`, its wake-up cost subtracted)."""
        e0, e1, e2 = ([torch.cuda.Event(enable_timing=True) for _ in range(reps)] for _ in "abc")
        cycles = int(self.pad_us * self.cycles_per_us)
        fresh = self.fresh if sets and sets[0] else None  # (the overhead's empty call: none)
        if fresh is not None and armed:
            fresh.arm(reps)
        for i in range(reps):
            args = sets[i % len(sets)]
            if fresh is not None:
                fresh.before(i, args)  # before the flush: the new values leave the L2 too
            self.cache.zero_()
            torch.cuda.synchronize()
            if pad:
                torch.cuda._sleep(cycles)  # the GPU waits here while the host queues the call
            e0[i].record()
            out = call(args)
            e1[i].record()
            torch.cuda.synchronize()  # every stream of the device: side-stream work is counted
            e2[i].record()
            if fresh is not None:
                fresh.after(i, out)
            del out
        torch.cuda.synchronize()
        stream = [max(a.elapsed_time(b), 1e-4) for a, b in zip(e0, e1, strict=True)]
        device = [
            max(a.elapsed_time(c) - self.overhead_ms, 1e-4) for a, c in zip(e0, e2, strict=True)
        ]
        return stream, device

    def sequence(
        self, call: Call, sets: list[list], reps: int, *, pad: bool = True, armed: bool = False
    ) -> list[float]:
        """ms per call. Padded: time on the caller's stream, host launch cost hidden.
        Unpadded: time until every stream is done, host launch cost included (the fallback).
        `armed`: one of the calls is the freshness probe (`Freshness`)."""
        stream, every = self._run(call, sets, reps, pad, armed)
        return stream if pad else every

    def measure(self, call: Call, sets: list[list], *, pad: bool = True) -> list[float]:
        """Warm up (compiles, autotuning, caches), then one sequence of repetitions."""
        host_us = []
        for i in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            call(sets[i % len(sets)])
            host_us.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        # Long enough to cover queueing the call (the first warm-up calls compile: not counted).
        self.last_host_ms = statistics.median(host_us[2:]) / 1000.0
        self.pad_us = min(max(3 * statistics.median(host_us[2:]) + 20.0, 50.0), 5000.0)
        estimate = statistics.median(self.sequence(call, sets, 5, pad=pad))
        for i in range(repetitions(estimate, budget_ms=self.warmup_ms, least=1, most=500)):
            call(sets[i % len(sets)])
        torch.cuda.synchronize()
        reps = repetitions(estimate, budget_ms=self.rep_ms, least=self.min_reps, most=self.max_reps)
        return self.sequence(call, sets, reps, pad=pad, armed=True)

    def kernelbench(
        self,
        call: Call,
        args: list,
        *,
        warmup: int = KERNELBENCH_WARMUP,
        trials: int = KERNELBENCH_TRIALS,
    ) -> dict[str, Any]:
        """KernelBench's method, the timer's second mode (`src/eval.py:
        time_execution_with_cuda_event` and `get_timing_stats`), reproduced so its numbers can
        sit beside ours: `warmup` synchronised calls, then `trials` calls each bracketed by two
        CUDA events on the current stream and followed by a device synchronise; same inputs
        every trial (`fresh` is not its method), no L2 flush, host launch cost inside the
        bracket. Mean and (population) std over the trials, in ms."""
        for _ in range(warmup):
            call(args)
            torch.cuda.synchronize()
        times: list[float] = []
        for _ in range(trials):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            call(args)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return {
            "mean": statistics.fmean(times),
            "std": statistics.pstdev(times),
            "min": min(times),
            "max": max(times),
            "num_trials": len(times),
            "warmup": warmup,
        }

    @staticmethod
    def fastest_ms(run: Callable[[], Any]) -> float:
        """The timer's third mode, the drafter's quick pick among variants of one draft
        (`tools.draft`'s pickers; it needs no Timer built, so a draft job allocates no flush
        buffer of its own): milliseconds one call of `run` takes on the GPU, the fastest of
        `do_bench`'s repetitions (10 ms of warm-up, 40 ms of repetitions, do_bench's own L2
        flush before each; the minimum, since other jobs may share the GPU)."""
        from triton.testing import do_bench

        return float(do_bench(run, warmup=10, rep=40, return_mode="min"))


REPEAT_RATIO = 0.8
"""A candidate whose calls on the same input values every time take less than this fraction of
its calls on new values each time is refused (`repeat_finding`), and only where that ratio is
also below this fraction of the reference's own (`reference_repeats`)."""

REPEAT_FLOOR_MS = 0.002
"""...and only when the difference is also larger than this (launch-latency noise)."""


def repeat_finding(
    fresh_ms: list[float], repeated_ms: list[float], reference: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Is the candidate faster on input values it has already seen? A result remembered inside
    a launch (a flag on the device that makes the kernel copy a stored product instead of
    computing it) gives outputs that are right on every input, so no comparison of values sees
    it, and on a GPU no count of the work inside a launch exists (docs/verification.md, known
    limits); but it only pays where calls repeat their inputs, as KernelBench's timer does. So
    the timing job times the candidate both ways, on the same buffers, and compares.

    The hardware too can be faster on repeated values (session 17, H200: an honest fp16
    convolution took 0.79x as long on repeats; tensor cores fed identical operands toggle fewer
    bits, power and clocks follow the data), for every kernel, PyTorch's own included. So the
    candidate's repeated/fresh ratio is judged against the reference's, timed the same two ways
    in the same job (`reference`, from `reference_repeats`): refused only below REPEAT_RATIO of
    the reference's ratio and below REPEAT_RATIO itself. Without a reference: REPEAT_RATIO."""
    f, r = statistics.median(fresh_ms), statistics.median(repeated_ms)
    ratio = r / max(f, 1e-9)
    ref_ratio = float(reference["ratio"]) if reference else 1.0
    bar = REPEAT_RATIO * min(ref_ratio, 1.0)
    faster = ratio < bar and f - r > REPEAT_FLOOR_MS
    finding: dict[str, Any] = {
        "checked": True,
        "ok": not faster,
        "fresh_ms": round(f, 6),
        "repeated_ms": round(r, 6),
        "ratio": round(ratio, 4),
        "bar": round(bar, 4),
        "reference": reference,
    }
    if reference:
        against = (
            f"; the reference (eager), timed the same two ways, {reference['repeated_ms']:.4f} "
            f"against {reference['fresh_ms']:.4f} ms, ratio {ref_ratio:.2f}"
        )
    else:
        against = "; the reference was not timed the same two ways"
    if faster:
        finding["message"] = (
            f"faster on inputs it has already seen: median {r:.4f} ms a call when every call "
            f"repeats the same values against {f:.4f} ms with new values each call "
            f"(ratio {ratio:.2f}, under {bar:.2f}{against}): a remembered result, not a kernel"
        )
    else:
        finding["message"] = (
            f"as fast on new values as on repeated ones, as far as the reference is "
            f"({f:.4f} ms against {r:.4f} ms, ratio {ratio:.2f}, bar {bar:.2f}{against})"
        )
    return finding


def _repeat_times(
    timer: Timer,
    call: Call,
    args: list,
    refresh: Callable[[list], None],
    estimate_ms: float | None,
) -> tuple[list[float], list[float]]:
    """(fresh, repeated) ms per call: sequences of calls on `args` with new values written
    before every call (`refresh`), and with the same values every call, alternated twice, each
    about 150 ms (5 to 30 calls), with the timer's L2 flush before every call either way. With
    no `estimate_ms`, three calls on new values give it. `timer.fresh` is left as found."""
    saved = timer.fresh
    fresh: list[float] = []
    repeated: list[float] = []
    try:
        if estimate_ms is None:
            timer.fresh = Freshness(refresh=refresh)
            estimate_ms = statistics.median(timer.sequence(call, [args], 3))
        reps = max(5, min(30, int(150.0 / max(estimate_ms, 1e-3))))
        for _ in range(2):
            timer.fresh = Freshness(refresh=refresh)
            fresh += timer.sequence(call, [args], reps)
            timer.fresh = None
            call(args)  # the values the repeated calls see are now ones the call has seen
            repeated += timer.sequence(call, [args], reps)
    finally:
        timer.fresh = saved
    return fresh, repeated


def time_repeats(
    timer: Timer,
    call: Call,
    args: list,
    refresh: Callable[[list], None],
    estimate_ms: float,
    reference: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`repeat_finding` measured (`_repeat_times`), judged against `reference`
    (`reference_repeats`: the reference timed the same two ways in the same job)."""
    fresh, repeated = _repeat_times(timer, call, args, refresh, estimate_ms)
    return repeat_finding(fresh, repeated, reference)


def reference_repeats(
    timer: Timer, call: Call, args: list, refresh: Callable[[list], None]
) -> dict[str, Any]:
    """The reference (eager, the same problem at the same precision) timed as `time_repeats`
    times the candidate, before the candidate is loaded: how much faster the hardware itself is
    on repeated values ("ratio", repeated over fresh), the yardstick of `repeat_finding`."""
    fresh, repeated = _repeat_times(timer, call, args, refresh, None)
    f, r = statistics.median(fresh), statistics.median(repeated)
    return {
        "fresh_ms": round(f, 6),
        "repeated_ms": round(r, 6),
        "ratio": round(r / max(f, 1e-9), 4),
    }


def uncounted_work(
    runs: list[list[float]],
    kernels: list[dict[str, Any]],
    *,
    rel: float = 0.10,
    abs_ms: float = 0.002,
) -> str | None:
    """Why the caller's-stream timing cannot be trusted, or None when it can.

    `kernels` is the profiler's breakdown (CUPTI sees every stream): the device time of each
    kernel per forward, measured back to back with a warm L2, so for an honest forward their sum
    is at most the timed median (cold L2, one stream, gaps included). Work on a stream that the
    caller's stream does not wait for is in the sum but not in the timing.
    """
    if not kernels:
        return "the profiler saw no GPU kernels, so the timing could not be checked against them"
    timed = min(statistics.median(r) for r in runs)
    busy = sum(float(k.get("time_us", 0.0)) for k in kernels) / 1000.0
    if busy > timed * (1 + rel) + abs_ms:
        return (
            f"the profiler saw {busy:.4f} ms of GPU kernels per forward but the caller's stream "
            f"was busy for {timed:.4f} ms: work ran on a stream the caller's stream does not wait "
            "for (a side stream)"
        )
    return None


def _sleep_cycles_per_us() -> float:
    """How many `torch.cuda._sleep` cycles make a microsecond on this GPU (measured once)."""
    cycles = 2_000_000
    torch.cuda._sleep(cycles // 10)  # warm
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / max(start.elapsed_time(end) * 1000.0, 1.0)


def timing_sets(inputs: list, k: int) -> list[list]:
    """The `k` input sets the timing rotates over: `inputs` themselves first (a large problem's
    only set, so never copied), then clones. Every set holds the same values, so eager, compile
    and the candidate see identical inputs; nothing timed writes into its inputs (verification
    rejects a candidate that does)."""
    return [inputs] + [_clone(inputs) for _ in range(k - 1)]


def independent_runs(
    timer: Timer, call: Call, sets: list[list], noise_floor: float, *, pad: bool = True
) -> list[list[float]]:
    """Two independent timing sequences of `call`; a third when the two disagree."""
    runs = [timer.measure(call, sets, pad=pad), timer.measure(call, sets, pad=pad)]
    if not _agree_samples(runs[0], runs[1], noise_floor):
        runs.append(timer.measure(call, sets, pad=pad))
    return runs


def _agree_samples(a: list[float], b: list[float], floor: float) -> bool:
    from tools.checks.roofline import agree, summarize

    return agree(summarize(a), summarize(b), floor)
