"""What the device and its profiler say, inside a timing job on a GPU: the device's peak
bandwidth and FLOP rates (`measure_peaks`, the roofline's roofs) and the per-kernel breakdown of
a forward (`breakdown`, torch.profiler, with the bytes each Triton kernel was handed)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

from tools.checks.timing import Call

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
