"""Pure arithmetic of profiling: timing statistics, speedups, roofline, report lines.

No torch, no GPU, no I/O: everything here is testable on a CPU and is shared by the timing job
(`tools.job.profile_worker`), the API (`tools.orchestrate.profile`) and the CLI. Times are in milliseconds,
bandwidths in bytes/s, FLOP rates in FLOP/s.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

NOISE_FLOOR = 0.03
"""Two timings of the same kernel closer than 3% (or 2x their spread) are the same timing."""

Bound = Literal["memory-bound", "compute-bound", "unknown"]


@dataclass(kw_only=True)
class TimingStats:
    """Summary of one sequence of timings of the same call."""

    median_ms: float
    p20_ms: float
    p80_ms: float
    iqr_ms: float
    """Interquartile range (p75 - p25)."""
    std_ms: float
    min_ms: float
    mean_ms: float
    n: int

    @property
    def rel_spread(self) -> float:
        """IQR relative to the median: the noise of this sequence."""
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else math.inf


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..1) of already sorted values."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    """Median, p20/p80, IQR, std of a sequence of timings."""
    if not samples_ms:
        raise ValueError("no timings to summarise")
    s = sorted(float(x) for x in samples_ms)
    return TimingStats(
        median_ms=percentile(s, 0.5),
        p20_ms=percentile(s, 0.2),
        p80_ms=percentile(s, 0.8),
        iqr_ms=percentile(s, 0.75) - percentile(s, 0.25),
        std_ms=statistics.pstdev(s) if len(s) > 1 else 0.0,
        min_ms=s[0],
        mean_ms=statistics.fmean(s),
        n=len(s),
    )


def disagreement(a: TimingStats, b: TimingStats) -> float:
    """Relative difference of two medians, |a - b| / min(a, b)."""
    lo = min(a.median_ms, b.median_ms)
    if lo <= 0:
        return 0.0 if a.median_ms == b.median_ms else math.inf
    return abs(a.median_ms - b.median_ms) / lo


def agree(a: TimingStats, b: TimingStats, floor: float = NOISE_FLOOR) -> bool:
    """Do two independent sequences measure the same time, within the noise?

    Allowed difference: max(`floor`, 2 x the larger relative IQR of the two)."""
    return disagreement(a, b) <= max(floor, 2.0 * max(a.rel_spread, b.rel_spread))


def pool(samples: Sequence[Sequence[float]]) -> TimingStats:
    """Statistics of several agreeing sequences taken together."""
    return summarize([x for seq in samples for x in seq])


def settle(runs: Sequence[TimingStats], floor: float = NOISE_FLOOR) -> tuple[list[int], bool]:
    """Which of two or three independent sequences to trust.

    Returns (indices of the agreeing sequences, noisy). Two sequences that agree are both kept.
    With a third (the re-time after a disagreement), the pair that agrees best is kept; if no
    pair agrees the measurement is noisy and all are kept."""
    if len(runs) < 2:
        return list(range(len(runs))), False
    pairs = [(i, j) for i in range(len(runs)) for j in range(i + 1, len(runs))]
    good = [
        (disagreement(runs[i], runs[j]), i, j) for i, j in pairs if agree(runs[i], runs[j], floor)
    ]
    if not good:
        return list(range(len(runs))), True
    _, i, j = min(good)
    return [i, j], False


@dataclass(kw_only=True)
class Speedup:
    """baseline / candidate, with a range from the p20/p80 of both."""

    value: float
    low: float
    """Pessimistic: baseline p20 / candidate p80."""
    high: float
    """Optimistic: baseline p80 / candidate p20."""


def speedup(baseline: TimingStats, candidate: TimingStats) -> Speedup:
    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else math.inf

    return Speedup(
        value=ratio(baseline.median_ms, candidate.median_ms),
        low=ratio(baseline.p20_ms, candidate.p80_ms),
        high=ratio(baseline.p80_ms, candidate.p20_ms),
    )


@dataclass(kw_only=True)
class DevicePeaks:
    """Ceilings measured on the device (not datasheet numbers)."""

    device: str
    bandwidth: float
    """Bytes/s of a large device-to-device copy (bytes read + bytes written)."""
    flops: dict[str, float]
    """FLOP/s of a large matrix product per dtype: `bf16`, `fp16`, `tf32`, `fp32`."""
    how: str = ""

    def flops_for(self, dtype: str) -> tuple[str, float]:
        """The compute roof for a problem whose data is `dtype` (e.g. `torch.float32`)."""
        key = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp32"}.get(
            dtype.replace("torch.", ""), "fp32"
        )
        if key not in self.flops:
            key = "bf16" if key == "fp16" and "bf16" in self.flops else next(iter(self.flops))
        return key, self.flops[key]


@dataclass(kw_only=True)
class Roofline:
    """Where one forward sits against the device's measured ceilings."""

    bytes: int
    """Bytes that must move: every input and parameter read once, every output written once."""
    flops: int
    """FLOPs of the reference (torch.utils.flop_counter); 0 for ops it does not count."""
    time_ms: float
    bandwidth: float
    """Achieved bytes/s."""
    bandwidth_fraction: float
    flop_rate: float
    flop_fraction: float
    intensity: float
    """FLOP per byte."""
    ridge: float
    """FLOP per byte where the memory and compute roofs meet."""
    bound: Bound
    floor_ms: float
    """The least time the ceilings allow: max(bytes / bandwidth, flops / FLOP rate)."""
    fraction: float
    """floor / time: 1.0 means at the roof."""
    compute_roof: str = "fp32"


def roofline(
    *,
    nbytes: int,
    flops: int,
    time_ms: float,
    peak_bandwidth: float,
    peak_flops: float,
    compute_roof: str = "fp32",
) -> Roofline:
    """Achieved rates, fractions of the peaks, and the memory-/compute-bound label."""
    t = time_ms / 1e3
    t_mem = nbytes / peak_bandwidth if peak_bandwidth > 0 else 0.0
    t_comp = flops / peak_flops if peak_flops > 0 else 0.0
    floor = max(t_mem, t_comp)
    if nbytes <= 0 and flops <= 0:
        bound: Bound = "unknown"
    else:
        bound = "compute-bound" if t_comp > t_mem else "memory-bound"
    bw = nbytes / t if t > 0 else 0.0
    rate = flops / t if t > 0 else 0.0
    return Roofline(
        bytes=int(nbytes),
        flops=int(flops),
        time_ms=time_ms,
        bandwidth=bw,
        bandwidth_fraction=bw / peak_bandwidth if peak_bandwidth > 0 else 0.0,
        flop_rate=rate,
        flop_fraction=rate / peak_flops if peak_flops > 0 else 0.0,
        intensity=flops / nbytes if nbytes > 0 else 0.0,
        ridge=peak_flops / peak_bandwidth if peak_bandwidth > 0 else 0.0,
        bound=bound,
        floor_ms=floor * 1e3,
        fraction=floor / t if t > 0 else 0.0,
        compute_roof=compute_roof,
    )


@dataclass(kw_only=True)
class KernelTime:
    """One kernel's share of a forward (torch.profiler, CUDA activity)."""

    name: str
    calls: float
    """Launches per forward."""
    time_us: float
    """Device time per forward (all its launches)."""
    share: float
    """Fraction of the forward's total kernel time."""
    bytes: int | None = None
    """Bytes of the tensors passed to it (each counted once), when it is a Triton launch."""
    triton: bool = False


def kernel_line(
    k: KernelTime,
    peaks: DevicePeaks | None,
    *,
    bound: Bound = "unknown",
    flops: int | None = None,
    compute_roof: str = "fp32",
) -> str:
    """`triton_red_fused_0: 71% of time, 12.4 us, 1.2 TB/s = 26% of measured peak; memory-bound`.

    `flops` is given only when this kernel does all of the forward's arithmetic."""
    parts = [f"{k.name}: {k.share:.0%} of time, {format_us(k.time_us)}"]
    t = k.time_us / 1e6
    if bound == "compute-bound" and flops and peaks is not None and t > 0:
        rate = flops / t
        peak = peaks.flops.get(compute_roof) or 0.0
        frac = f" = {rate / peak:.0%} of measured {compute_roof} peak" if peak else ""
        parts.append(f"{format_flops(rate)}{frac}")
    elif k.bytes and t > 0:
        bw = k.bytes / t
        frac = (
            f" = {bw / peaks.bandwidth:.0%} of measured peak"
            if peaks is not None and peaks.bandwidth
            else ""
        )
        parts.append(f"{format_bandwidth(bw)}{frac}")
    line = ", ".join(parts)
    if bound != "unknown":
        line += f"; {bound}"
    return line


def roofline_line(r: Roofline) -> str:
    """The whole forward against the roofs, in one sentence."""
    text = (
        f"whole forward: {format_bytes(r.bytes)} must move and {r.flops:.3g} FLOPs "
        f"({r.intensity:.2g} FLOP/B; ridge {r.ridge:.0f} FLOP/B) -> {r.bound}; "
        f"{format_bandwidth(r.bandwidth)} = {r.bandwidth_fraction:.0%} of measured bandwidth"
    )
    if r.flops:
        text += f", {format_flops(r.flop_rate)} = {r.flop_fraction:.0%} of measured {r.compute_roof} peak"
    text += (
        f"; the roofs allow {format_ms(r.floor_ms)}, so it runs at {r.fraction:.0%} of the roofline"
    )
    return text


def format_ms(ms: float) -> str:
    if ms < 1e-3:
        return f"{ms * 1e6:.0f} ns"
    if ms < 1.0:
        return f"{ms * 1e3:.1f} us"
    return f"{ms:.3f} ms"


def format_us(us: float) -> str:
    return format_ms(us / 1e3)


def format_bandwidth(bps: float) -> str:
    if bps >= 1e12:
        return f"{bps / 1e12:.2f} TB/s"
    if bps >= 1e9:
        return f"{bps / 1e9:.1f} GB/s"
    return f"{bps / 1e6:.1f} MB/s"


def format_flops(fps: float) -> str:
    if fps >= 1e12:
        return f"{fps / 1e12:.1f} TFLOP/s"
    if fps >= 1e9:
        return f"{fps / 1e9:.1f} GFLOP/s"
    return f"{fps / 1e6:.1f} MFLOP/s"


def format_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def format_speedup(s: Speedup | None) -> str:
    if s is None:
        return "-"
    return f"{s.value:.2f}x [{s.low:.2f}-{s.high:.2f}]"


def input_sets_for(input_bytes: int, l2_bytes: int, *, most: int = 8) -> int:
    """How many cloned input sets to rotate between: enough that together they are 2x the L2,
    so no repetition finds its inputs in the cache (one set when a set alone overflows it)."""
    if input_bytes <= 0 or input_bytes >= l2_bytes:
        return 1
    return max(2, min(most, math.ceil(2 * l2_bytes / input_bytes)))


def repetitions(estimate_ms: float, *, budget_ms: float, least: int, most: int) -> int:
    """Repetitions for one sequence: fill `budget_ms` of measured time, within [least, most]."""
    if estimate_ms <= 0:
        return most
    return max(least, min(most, int(budget_ms / estimate_ms)))


def slowdown_reason(profile: dict | None) -> str | None:
    """What limits a correct kernel that is slower than a baseline, from a profile (`tools.orchestrate.profile`
    as a dict): how far each of them gets toward the roof that bounds the problem. None where the
    profile holds no timings or no roofline.

    `memory-bound: candidate 3.16 ms = 96% of the bandwidth roof; eager 3.05 ms = 99%` says there is
    no headroom left; `compute-bound: candidate 7.83 ms = 10% of the fp32 roof; eager 1.85 ms = 42%`
    says the baseline's library kernel does the same FLOPs four times as well; a baseline above
    100% of the fp32 roof runs on TF32 tensor cores (PyTorch's default for cuDNN convolutions).
    Where eager was also timed with TF32 off (`eager_fp32`), the text ends with that time and
    the candidate's speed against it: the comparison at the precision the candidate is held to.
    """
    if not isinstance(profile, dict):
        return None
    roof = profile.get("roofline")
    times = {
        name: (profile.get(key) or {}).get("median_ms")
        for name, key in (("candidate", "candidate"), ("eager", "eager"), ("compile", "compiled"))
    }
    layers = _layers_reason(profile)
    if not isinstance(roof, dict) or not times["candidate"] or not roof.get("floor_ms"):
        return layers
    floor = float(roof["floor_ms"])
    bound = roof.get("bound") or "unknown"
    which = "bandwidth" if bound == "memory-bound" else f"{roof.get('compute_roof') or 'fp32'}"
    parts = [
        f"{name} {format_ms(ms)} = {floor / ms:.0%}" for name, ms in times.items() if ms and ms > 0
    ]
    text = f"{bound}: " + "; ".join(parts) + f" of the {which} roof (floor {format_ms(floor)})"
    frac = {name: floor / ms for name, ms in times.items() if ms and ms > 0}
    over = [name for name, f in frac.items() if name != "candidate" and f > 1.15]
    if over and bound == "compute-bound":
        text += f"; {' and '.join(over)} well above the {which} roof: tensor cores (TF32 or lower)"
    fp32 = (profile.get("eager_fp32") or {}).get("median_ms")
    if fp32 and fp32 > 0:
        text += (
            f"; eager at full fp32 (TF32 off, the precision the candidate meets) {format_ms(fp32)}"
            f" = {floor / fp32:.0%}: the candidate is {fp32 / times['candidate']:.2f}x of it"
        )
    elif frac["candidate"] >= 0.9 and frac["candidate"] >= 0.95 * max(frac.values()):
        text += "; all at the roof: no headroom"
    elif frac["candidate"] < 0.9 <= max(frac.values()):
        text += "; the baseline reaches the roof, the candidate does not"
    return text + (f"; {layers}" if layers else "")


def _layers_reason(profile: dict) -> str | None:
    """The class of layer a network loses most time on (`tools.checks.time_by_class.slowest_class`),
    from the profile's `time_by_class`, where it is slower than its better baseline."""
    from tools.checks.time_by_class import ClassTime, slowest_class

    best = (profile.get("speedup_best") or {}).get("value")
    rows = profile.get("time_by_class") or []
    if not rows or not isinstance(best, (int, float)) or best >= 1.0:
        return None
    try:
        return slowest_class([ClassTime(**r) for r in rows])
    except TypeError:  # a profile written by another version
        return None
