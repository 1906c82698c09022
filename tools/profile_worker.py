"""The timing job. Runs ONLY inside a sandbox job process on a GPU (`tools.sandbox`), one per GPU
at a time, after the candidate was verified correct.

Order inside the job matters for honesty:
1. device peaks (when not cached), the problem, its inputs, the bytes/FLOPs of one forward, and
   the reference outputs for the freshness check are all computed *before* the candidate's code
   is imported, and so are the eager and `torch.compile` baselines: an imported candidate could
   patch torch and slow the baselines down.
2. the candidate is timed in two independent sequences (a third when they disagree);
3. a torch.profiler pass gives the per-kernel breakdown, a launch hook the bytes each Triton
   kernel was handed;
4. freshness: new values are written *in place* into the buffers the candidate was timed on and
   its output is compared again, so a kernel that caches its result by data pointer fails.

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

Memory: KernelBench's inputs reach 6.4 GB (a ReLU on 4096 x 393216 fp32), so the job keeps few
full-size tensors alive: the inputs themselves are the only input set when a set is large (no
clone), the reference on new values is computed in those same buffers (their values restored from
the host afterwards), FLOPs are counted on them, every phase's outputs are freed, and the
freshness comparison is chunked (`tools.compare`). At the peak: one input set and two outputs
(the reference on new values, and the call being timed): 18.8 GiB reserved for that ReLU on an
H200 (6 GiB a tensor). Before, four input sets and two outputs were alive, and the freshness
check's float64 copies and temporaries came on top: 96.3 GiB, about 16 tensors' worth.
`result["memory"]` has the job's GPU and host peaks.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from tools import guard
from tools.compare import CHUNK_ELEMS, mismatch_report, normalise_outputs
from tools.precision import full_fp32
from tools.roofline import input_sets_for, repetitions
from tools.worker import (
    _clone,
    _copy_matching_weights,
    _device_context,
    _sync,
    _to_device,
    exec_module,
    job_device,
    peak_memory,
)

Call = Callable[[list], Any]

MAX_ROTATED_SET_BYTES = 256 << 20
"""Above this one input set is never cloned for rotation (KernelBench's sets reach 6.4 GB)."""
MAX_TRACE_CHARS = 64 << 20
"""A Chrome trace handed back is cut here (10 profiled forwards are a few hundred KB)."""
FRESH_SEED_OFFSET = 2000
"""The freshness check's new values come from a generator seeded `seed + FRESH_SEED_OFFSET`."""


def input_sets(input_bytes: int, l2_bytes: int) -> int:
    """How many input sets the timing rotates over: `input_sets_for`'s answer, except one (the
    inputs themselves, no clone) for a set over 4x the L2 or over 256 MiB. Such a set cannot sit in
    the L2 anyway, and the L2 is flushed before every repetition."""
    if input_bytes > MAX_ROTATED_SET_BYTES or input_bytes > 4 * l2_bytes:
        return 1
    return input_sets_for(input_bytes, l2_bytes)


class Timer:
    """Padded event timing with an L2 flush before every repetition (see the module doc)."""

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
        self.overhead_ms = statistics.median(self._run(lambda args: None, [[]], 200, True)[1])

    def _run(self, call: Call, sets: list[list], reps: int, pad: bool):
        """`reps` timed calls rotating over `sets`. Per call: the time on the caller's stream
        (start event to an event queued right after the call) and the time until every stream
        is done (to an event after `torch.cuda.synchronize()`, its wake-up cost subtracted)."""
        e0, e1, e2 = ([torch.cuda.Event(enable_timing=True) for _ in range(reps)] for _ in "abc")
        cycles = int(self.pad_us * self.cycles_per_us)
        for i in range(reps):
            args = sets[i % len(sets)]
            self.cache.zero_()
            torch.cuda.synchronize()
            if pad:
                torch.cuda._sleep(cycles)  # the GPU waits here while the host queues the call
            e0[i].record()
            call(args)
            e1[i].record()
            torch.cuda.synchronize()  # every stream of the device: side-stream work is counted
            e2[i].record()
        torch.cuda.synchronize()
        stream = [max(a.elapsed_time(b), 1e-4) for a, b in zip(e0, e1, strict=True)]
        device = [
            max(a.elapsed_time(c) - self.overhead_ms, 1e-4) for a, c in zip(e0, e2, strict=True)
        ]
        return stream, device

    def sequence(self, call: Call, sets: list[list], reps: int, *, pad: bool = True) -> list[float]:
        """ms per call. Padded: time on the caller's stream, host launch cost hidden.
        Unpadded: time until every stream is done, host launch cost included (the fallback)."""
        stream, every = self._run(call, sets, reps, pad)
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
        return self.sequence(call, sets, reps, pad=pad)


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


KERNELBENCH_WARMUP = 3
KERNELBENCH_TRIALS = 100


def kernelbench_times(
    call: Call, args: list, *, warmup: int = KERNELBENCH_WARMUP, trials: int = KERNELBENCH_TRIALS
) -> dict[str, Any]:
    """KernelBench's timing method (`src/eval.py: time_execution_with_cuda_event` and
    `get_timing_stats`), reproduced so its numbers can sit beside ours: `warmup` synchronised
    calls, then `trials` calls each bracketed by two CUDA events on the current stream and
    followed by a device synchronise; same inputs every trial, no L2 flush, host launch cost
    inside the bracket. Mean and (population) std over the trials, in ms."""
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


# ------------------------------------------------------------------------------------------
# Device peaks


def _events_ms(fn: Callable[[], Any], reps: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def _copy_ms(nbytes: int) -> float:
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    return _events_ms(lambda: dst.copy_(src), reps=20)


def _matmul_ms(size: int, dtype: torch.dtype) -> float:
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    return _events_ms(lambda: a @ b, reps=10)


def measure_peaks(device_name: str) -> dict[str, Any]:
    """A 1 GiB device-to-device copy (bytes read + written) and large matrix products on random
    data (zeros run faster than real data)."""
    n = 1 << 30
    copy_ms = _copy_ms(n)
    flops: dict[str, float] = {}
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for key, dtype, size, tf32 in (
            ("bf16", torch.bfloat16, 8192, False),
            ("fp16", torch.float16, 8192, False),
            ("tf32", torch.float32, 8192, True),
            ("fp32", torch.float32, 4096, False),
        ):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            flops[key] = 2 * size**3 / (_matmul_ms(size, dtype) / 1e3)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    torch.cuda.empty_cache()
    return {
        "device": device_name,
        "bandwidth": 2 * n / (copy_ms / 1e3),
        "flops": flops,
        "how": "1 GiB device-to-device copy (read+write); 8192^3 bf16/fp16/tf32 and 4096^3 fp32 "
        "matmul on random data; torch " + str(torch.__version__),
    }


# ------------------------------------------------------------------------------------------
# Breakdown


@contextlib.contextmanager
def _launch_bytes():
    """Record, per Triton kernel name, the bytes of the tensors each launch was handed (each
    distinct buffer once): the bytes that kernel must move at the least."""
    from triton.runtime.jit import JITFunction

    seen: dict[str, int] = {}
    original = JITFunction.run

    def run(self_fn, *args, **kwargs):
        fn = getattr(self_fn, "fn", None)
        name = getattr(fn, "__name__", None) or "kernel"
        sizes: dict[int, int] = {}
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, torch.Tensor) and a.numel():
                ptr = a.data_ptr()
                sizes[ptr] = max(sizes.get(ptr, 0), a.numel() * a.element_size())
        seen[name] = seen.get(name, 0) + sum(sizes.values())
        return original(self_fn, *args, **kwargs)

    JITFunction.run = run
    try:
        yield seen
    finally:
        JITFunction.run = original


def breakdown(
    call: Call, sets: list[list], calls: int, trace_to: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Per-kernel device time per forward (torch.profiler), largest first. `trace_to`: also
    write that profiler pass as a Chrome/Perfetto trace (JSON) to this path."""
    from torch.profiler import ProfilerActivity, profile

    notes: list[str] = []
    with _launch_bytes() as launched:
        call(sets[0])
        torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            call(sets[i % len(sets)])
        torch.cuda.synchronize()
    if trace_to:
        prof.export_chrome_trace(trace_to)
    totals: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        entry = totals.setdefault(e.name, [0.0, 0])
        entry[0] += e.time_range.elapsed_us()
        entry[1] += 1
    if not totals:
        notes.append("torch.profiler recorded no GPU kernels; no per-kernel breakdown")
        return [], notes
    whole = sum(t for t, _ in totals.values()) or 1.0
    rows = [
        {
            "name": name,
            "calls": n / calls,
            "time_us": t / calls,
            "share": t / whole,
            "bytes": launched.get(name),
            "triton": name in launched,
        }
        for name, (t, n) in totals.items()
    ]
    rows.sort(key=lambda r: -r["time_us"])
    return rows, notes


# ------------------------------------------------------------------------------------------
# The job


def timing_sets(inputs: list, k: int) -> list[list]:
    """The `k` input sets the timing rotates over: `inputs` themselves first (a large problem's
    only set, so never copied), then clones. Every set holds the same values, so eager, compile
    and the candidate see identical inputs; nothing timed writes into its inputs (verification
    rejects a candidate that does)."""
    return [inputs] + [_clone(inputs) for _ in range(k - 1)]


def _work(model: torch.nn.Module, inputs: list) -> dict[str, Any]:
    """Bytes that must move (inputs and parameters read once, outputs written once) and FLOPs.

    Runs the model on `inputs` themselves (a clone would be one more input set on the GPU); a
    model that writes into its inputs is harmless here, as the caller restores their values
    before anything is timed. The outputs are freed before returning."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        out = normalise_outputs(model(*inputs))
    _sync()
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    state = list(model.state_dict().values())
    nbytes = sum(
        t.numel() * t.element_size()
        for t in tensors + state + list(out)
        if isinstance(t, torch.Tensor)
    )
    dtype = next(
        (str(t.dtype) for t in out if isinstance(t, torch.Tensor) and t.is_floating_point()),
        "torch.float32",
    )
    del out
    return {
        "bytes": int(nbytes),
        "flops": int(fc.get_total_flops()),
        "dtype": dtype,
        "input_bytes": int(sum(t.numel() * t.element_size() for t in tensors)),
    }


def fresh_moments(bufs: list) -> list:
    """Per floating-point input: (mean, std, non-negative) of its values, so that new values
    follow the problem's own distribution. Values of another scale fail honest kernels: on the
    H200, normal(0.25, 1.5) values in place of KernelBench's rand() made 975 of 8.4M elements
    of a correct fp32 GEMM (16_Matmul_with_transposed_A) miss 1e-4 through cancellation."""
    out = []
    for x in bufs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            xf = x.float() if x.element_size() < 4 else x
            out.append(
                (float(xf.mean()), float(xf.std()) if x.numel() > 1 else 1.0, bool(x.min() >= 0))
            )
        else:
            out.append(None)
    return out


def _fill_fresh(bufs: list, seed: int, moments: list | None = None) -> None:
    """Write new values into the floating-point tensors of `bufs`, in place: normal with each
    input's own mean and spread (`fresh_moments`; folded to non-negative for inputs that were),
    or normal(0.25, 1.5) without moments. The same seed and the same buffers give the same
    values: the job writes them once to compute the reference, and again after the timing,
    without keeping them in between."""
    generators: dict[torch.device, torch.Generator] = {}
    for i, x in enumerate(bufs):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if x.device not in generators:
                generators[x.device] = torch.Generator(device=x.device).manual_seed(seed)
            m = moments[i] if moments is not None and i < len(moments) else None
            if m is None:
                x.normal_(0.25, 1.5, generator=generators[x.device])
                continue
            mean, std, non_negative = m
            x.normal_(mean, max(std, 1e-6), generator=generators[x.device])
            if non_negative:
                x.abs_()


def _reference_on_fresh(
    model: torch.nn.Module, inputs: list, originals: list, fill: Callable[[list], None]
) -> list:
    """The model's outputs on new values written by `fill`, computed in `inputs`' own buffers (no
    second input set on the device); the floating-point inputs then get their values back from
    `originals` (host copies), so everything timed afterwards sees the original inputs."""
    fill(inputs)
    with torch.no_grad():
        out = normalise_outputs(model(*inputs))
    storages = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}
    # An output in an input's memory (a model returning its input, or a view of it) would
    # change with the restore below, so it is copied first.
    expected = [
        o.clone()
        if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
        else o
        for o in out
    ]
    del out
    for x, original in zip(inputs, originals, strict=True):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x.copy_(original)
    _sync()
    return expected


def _host_originals(host: list, device_inputs: list) -> list:
    """What `_reference_on_fresh` restores the floating-point inputs from: the tensors
    `get_inputs()` returned when they were on the host, a host copy of those it returned on the
    device already (moving them did not copy them)."""
    return [
        h.detach().to("cpu", copy=True)
        if h is d and isinstance(h, torch.Tensor) and h.is_floating_point()
        else h
        for h, d in zip(host, device_inputs, strict=True)
    ]


def _error(stage: str, exc: BaseException, limit: int = 6) -> dict[str, Any]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-limit))
    return {
        "error": f"{stage}: {type(exc).__name__}: {exc}",
        "traceback": tb[-3000:],
        "stage": stage,
    }


def profile_job(
    problem_source: str,
    problem_path: str,
    kernel_source: str,
    kernel_path: str,
    *,
    settings: dict[str, Any],
    cached_baselines: dict[str, dict[str, Any]],
    cached_peaks: dict[str, dict[str, Any]],
    atol: float,
    rtol: float,
) -> dict[str, Any]:
    """Time the baselines and the candidate on this job's GPU. Returns raw samples and evidence."""
    if job_device() != "cuda" or not torch.cuda.is_available():
        return {"error": "no CUDA device in the timing job", "stage": "device"}
    import triton

    props = torch.cuda.get_device_properties(0)
    name = torch.cuda.get_device_name(0)
    l2 = int(getattr(props, "L2_cache_size", 50 << 20))
    result: dict[str, Any] = {
        "device": name,
        "l2_bytes": l2,
        "torch_version": str(torch.__version__),
        "triton_version": str(triton.__version__),
        "notes": [],
    }
    t0 = time.perf_counter()
    if name in cached_peaks:
        result["peaks"], result["peaks_measured"] = cached_peaks[name], False
    else:
        result["peaks"], result["peaks_measured"] = measure_peaks(name), True
    result["timings"] = {"peaks_s": time.perf_counter() - t0}
    timer = Timer(
        l2,
        warmup_ms=settings["warmup_ms"],
        rep_ms=settings["rep_ms"],
        min_reps=settings["min_reps"],
        max_reps=settings["max_reps"],
    )
    result["bracket_overhead_ms"] = timer.overhead_ms
    result["timings"]["timer_s"] = time.perf_counter() - t0 - result["timings"]["peaks_s"]
    seed = int(settings.get("seed", 42))
    with _device_context():
        problem = exec_module(problem_source, problem_path, "problem")
        init = list(problem.get_init_inputs())
        torch.manual_seed(seed)
        # As constructed (training mode), like the verification's reference: eval() changed
        # BatchNorm to running statistics, and correct kernels of KernelBench's Gemm+BatchNorm
        # problems were refuted as stale by the freshness check (H200, 2026-11-30).
        model = problem.Model(*init).to("cuda")
        torch.manual_seed(seed + 1000)
        try:
            # Made on the GPU: building a 6.4 GB KernelBench input on the host took ~10 s of a
            # timing job that holds its GPU alone (H200, session 4).
            with torch.device("cuda"):
                host = list(problem.get_inputs())
        except Exception:  # a get_inputs() that only works on the host
            torch.manual_seed(seed + 1000)
            host = list(problem.get_inputs())
        base = _to_device(host, "cuda")
        originals = _host_originals(host, base)
        del host
        work = _work(model, base)
        result["work"] = work

        moments = fresh_moments(base)

        def fill_fresh(bufs: list) -> None:
            _fill_fresh(bufs, seed + FRESH_SEED_OFFSET, moments)

        # Computed before the candidate's code is loaded; kept (one output set) until the
        # freshness check, which writes the same new values into the same buffers.
        with full_fp32():  # like the judge's reference (tools.precision)
            fresh_ref = _reference_on_fresh(model, base, originals, fill_fresh)
        del originals
        torch.cuda.empty_cache()
        k = input_sets(work["input_bytes"], l2)
        sets = timing_sets(base, k)
        result["input_sets"] = k

        def eager(args: list) -> Any:
            with torch.no_grad():
                return model(*args)

        cached = cached_baselines.get(name) or {}
        want_compile = bool(settings.get("compile", True))
        if cached.get("eager") and (
            not want_compile or "compile" in cached or "compile_error" in cached
        ):
            result["baselines"] = cached
            result["baselines_from_cache"] = True
        else:
            baselines: dict[str, Any] = {"eager_samples": timer.measure(eager, sets)}
            baselines["eager_host_ms"] = timer.last_host_ms
            if want_compile:
                try:
                    compile_in_this_process()
                    compiled = torch.compile(model)

                    def run_compiled(args: list) -> Any:
                        with torch.no_grad():
                            return compiled(*args)

                    baselines["compile_samples"] = timer.measure(run_compiled, sets)
                    baselines["compile_host_ms"] = timer.last_host_ms
                    del compiled, run_compiled
                except Exception as exc:  # a baseline that cannot compile is a note, not a failure
                    baselines["compile_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
            result["baselines"] = baselines
            result["baselines_from_cache"] = False
        if settings.get("kernelbench"):
            # KernelBench's own method beside ours, eager timed before the candidate is loaded
            result["kernelbench"] = {"eager": kernelbench_times(eager, sets[0])}
        # The baselines' outputs and workspaces are garbage by now: give their blocks back so
        # the candidate starts from the problem's own tensors.
        torch.cuda.empty_cache()
        result["timings"]["baselines_s"] = time.perf_counter() - t0

        # ---- from here on, the candidate's code is loaded ----
        violations_before = len(guard.VIOLATIONS)
        local_path = os.path.join(os.getcwd(), os.path.basename(kernel_path) or "candidate.py")
        with open(local_path, "w") as f:
            f.write(kernel_source)
        t_load = time.perf_counter()
        try:
            cand = exec_module(kernel_source, local_path, "candidate")
            torch.manual_seed(seed)
            model_new = cand.ModelNew(*init)
            if isinstance(model_new, torch.nn.Module):
                model_new = model_new.to("cuda")
                _copy_matching_weights(model, model_new)
        except BaseException as exc:  # noqa: BLE001 - a candidate's SystemExit is its fault too
            return {**result, **_error("candidate load", exc), "memory": peak_memory()}

        def candidate(args: list) -> Any:
            with torch.no_grad():
                return model_new(*args)

        t1 = time.perf_counter()
        result["timings"]["load_s"] = t1 - t_load
        try:
            candidate(sets[0])  # the first call compiles: timed apart, for the record
            torch.cuda.synchronize()
            result["timings"]["first_call_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            runs = _independent_runs(timer, candidate, sets, settings["noise_floor"])
            result["candidate_host_ms"] = timer.last_host_ms
            result["candidate_samples"] = runs
            result["timings"]["candidate_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            if settings.get("kernelbench"):
                result["kernelbench"]["candidate"] = kernelbench_times(candidate, sets[0])
            trace_to = os.path.join(os.getcwd(), "trace.json") if settings.get("trace") else None
            try:
                result["kernels"], notes = breakdown(
                    candidate, sets, int(settings["profile_calls"]), trace_to
                )
                result["notes"] += notes
                if trace_to and os.path.exists(trace_to):
                    with open(trace_to, encoding="utf-8") as f:
                        result["trace"] = f.read(MAX_TRACE_CHARS + 1)[:MAX_TRACE_CHARS]
            except Exception as exc:  # the profiler is evidence, not a verdict
                result["kernels"] = []
                result["notes"].append(
                    f"per-kernel breakdown unavailable: {type(exc).__name__}: {exc}"
                )
            result["timings"]["breakdown_s"] = time.perf_counter() - t1
            why = uncounted_work(runs, result["kernels"])
            if why:
                # Fall back to timing until every stream is done, host launch cost included: never
                # flattering, and it counts side-stream work whatever stream it ran on.
                runs = _independent_runs(timer, candidate, sets, settings["noise_floor"], pad=False)
                result["candidate_samples"] = runs
                result["notes"].append(
                    f"{why}; timed instead until every stream was done, host launch cost included"
                )
            result["fresh"] = _freshness(candidate, sets[0], fill_fresh, fresh_ref, atol, rtol)
            del fresh_ref
        except BaseException as exc:  # noqa: BLE001
            return {**result, **_error("candidate run", exc), "memory": peak_memory()}
        result["violations"] = list(guard.VIOLATIONS[violations_before:])
    result["timings"]["total_s"] = time.perf_counter() - t0
    result["memory"] = peak_memory()
    return result


def compile_in_this_process() -> None:
    """Make Inductor compile inside this job process.

    With more than one core Inductor starts a pool of `python` compile workers; the job's guard
    refuses that subprocess, so on the 16-core GPU machine every `torch.compile` baseline failed
    with a PermissionError (and left a guard violation). One compile thread needs no pool.
    """
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1


def _independent_runs(
    timer: Timer, call: Call, sets: list[list], noise_floor: float, *, pad: bool = True
) -> list[list[float]]:
    """Two independent timing sequences of `call`; a third when the two disagree."""
    runs = [timer.measure(call, sets, pad=pad), timer.measure(call, sets, pad=pad)]
    if not _agree_samples(runs[0], runs[1], noise_floor):
        runs.append(timer.measure(call, sets, pad=pad))
    return runs


def _agree_samples(a: list[float], b: list[float], floor: float) -> bool:
    from tools.roofline import agree, summarize

    return agree(summarize(a), summarize(b), floor)


def _freshness(
    call: Call,
    bufs: list,
    fresh: list | Callable[[list], None],
    expected: list,
    atol: float,
    rtol: float,
    *,
    chunk_elems: int = CHUNK_ELEMS,
) -> dict[str, Any]:
    """Write new values into the very buffers the candidate was timed on and check its output.

    A result cached by data pointer (or any other memoisation of the inputs' identity) is now
    stale and fails this. `fresh` writes the new values: a function filling `bufs` in place (the
    job's, so no second input set is alive), or a list of values copied in. `expected` is the
    reference on those values; outputs are compared `chunk_elems` elements at a time, on their
    own device (`tools.compare.mismatch_report`)."""
    if not any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in bufs):
        return {"checked": False, "ok": True, "message": "no floating-point inputs to rewrite"}
    if callable(fresh):
        fresh(bufs)
    else:
        for buf, val in zip(bufs, fresh, strict=True):
            if isinstance(buf, torch.Tensor) and buf.is_floating_point():
                buf.copy_(val)
    _sync()
    got = normalise_outputs(call(bufs))
    _sync()
    if len(got) != len(expected):
        return {
            "checked": True,
            "ok": False,
            "message": f"{len(got)} outputs instead of {len(expected)}",
        }
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if not isinstance(g, torch.Tensor) or g.shape != e.shape:
            return {
                "checked": True,
                "ok": False,
                "message": f"output {i} changed shape on new input values",
            }
        # hint_full_elems=0: the pattern hint from per-chunk counts, never whole float64 copies
        report = mismatch_report(
            g, e, atol, rtol, output_index=i, chunk_elems=chunk_elems, hint_full_elems=0
        )
        if report is not None:
            return {
                "checked": True,
                "ok": False,
                "message": f"output {i}: {report.bad_count} of {e.numel()} elements wrong after "
                "new values were written into the same input buffers (a result cached by the "
                "input's address?)",
            }
    return {"checked": True, "ok": True, "message": "output follows new values in the same buffers"}
