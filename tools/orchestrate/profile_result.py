"""What profiling answers, and how it reads: `ProfileOptions` (how to time, which baseline is
the bar), `ProfileResult` (timings, speedups, roofline, per-kernel breakdown; JSON-serialisable)
and its text for a person or the next prompt (`render_profile`)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from tools.checks.roofline import (
    NOISE_FLOOR,
    DevicePeaks,
    KernelTime,
    Roofline,
    Speedup,
    TimingStats,
    format_ms,
    format_speedup,
    kernel_line,
    roofline_line,
)
from tools.checks.time_by_class import ClassTime, class_lines, slowest_class
from tools.core.errors import BadInputError
from tools.core.results import Verdict

ProfileStatus = Literal["ok", "slower", "unavailable", "not_verified", "noisy"]


PROFILE_STATUSES: tuple[str, ...] = ProfileStatus.__args__  # type: ignore[attr-defined]


BASELINES = ("eager", "compile", "best")


DEFAULT_BASELINE = "best"
"""The bar a candidate must clear: the better (faster) of eager and torch.compile."""


@dataclass(kw_only=True)
class ProfileOptions:
    """How to time. Defaults suit kernels from a few microseconds to tens of milliseconds."""

    baseline: str = DEFAULT_BASELINE
    """The baseline whose speedup decides `ok` vs `slower`: `eager`, `compile` or `best` (the
    faster of the two that were timed)."""
    compile_baseline: bool = True
    """Also time `torch.compile(Model)` (reported either way unless disabled)."""
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    """Measured time one sequence aims for; repetitions are clamped to [min_reps, max_reps]."""
    min_reps: int = 20
    max_reps: int = 1000
    noise_floor: float = NOISE_FLOOR
    profile_calls: int = 10
    reverify_above: float = 10.0
    """A speedup over this (against either baseline) is re-verified before it is believed."""
    reverify_trials: int = 20
    timeout_s: float = 600.0
    memory_mb: int | None = None
    """The timing job's host memory cap in MB; None derives it from the problem's size
    (`timing_memory_mb`)."""
    use_cache: bool = True
    refresh_baselines: bool = False
    kernelbench: bool = False
    """Also time eager and the candidate with KernelBench's method (`ProfileResult.kernelbench`):
    3 warm-up calls, 100 trials bracketed by CUDA events, mean and std."""
    trace: bool = False
    """Keep the profiler pass as a Chrome/Perfetto trace (`ProfileResult.trace`)."""

    def __post_init__(self) -> None:
        if self.baseline not in BASELINES:
            raise BadInputError(
                f"unknown baseline {self.baseline!r}; choose one of {', '.join(BASELINES)}"
            )
        if self.baseline == "compile" and not self.compile_baseline:
            raise BadInputError("baseline 'compile' needs the compile baseline to be timed")


@dataclass(kw_only=True)
class ProfileResult:
    """The answer of `profile()`. JSON-serialisable (`to_dict`); times in milliseconds."""

    status: ProfileStatus
    message: str
    problem: str
    kernel: str
    baseline: str
    device: str = "cpu"
    """The GPU's name, or `cpu`."""
    verdict: Verdict | None = None
    candidate: TimingStats | None = None
    """The trusted candidate timing (the agreeing sequences pooled)."""
    candidate_runs: list[TimingStats] = field(default_factory=list)
    """Each independent sequence: two, or three after a re-time."""
    eager: TimingStats | None = None
    compiled: TimingStats | None = None
    speedup_eager: Speedup | None = None
    speedup_compile: Speedup | None = None
    speedup_best: Speedup | None = None
    """Over the faster of the baselines that were timed (the lower of the two speedups)."""
    eager_fp32: TimingStats | None = None
    """Eager again with PyTorch's TF32 switches off, where eager ran cuDNN with TF32 (a model
    with convolutions): the precision the candidate is held to. Evidence beside the bar, not the
    bar (the bar keeps PyTorch's defaults, the speed the user has)."""
    speedup_eager_fp32: Speedup | None = None
    eager_cudnn_benchmark: TimingStats | None = None
    """Eager again with `torch.backends.cudnn.benchmark = True` (`tools.orchestrate.baselines.
    CUDNN_BENCHMARK`, issue 35): what a user tuning convolutions gets. Evidence beside the bar,
    not the bar."""
    speedup_eager_cudnn_benchmark: Speedup | None = None
    kernels: list[KernelTime] = field(default_factory=list)
    time_by_class: list[ClassTime] = field(default_factory=list)
    """Where the time goes per class of layer (convolution, GEMM, normalization, ...): the
    candidate's kernel time beside eager's and torch.compile's (`tools.checks.time_by_class`)."""
    roofline: Roofline | None = None
    peaks: DevicePeaks | None = None
    baselines_cached: bool = False
    reverified: Verdict | None = None
    """The stricter re-verification run after a speedup over `reverify_above`."""
    refuted_by: str | None = None
    """Why a verified kernel ended `not_verified` in its timing job: `crash`, `timeout`,
    `rules` (a sandbox rule broken) or `stale` (an output that was not computed); `verdict`
    then says so too."""
    freshness: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, float] | None = None
    """The timing job's peaks in MB: `gpu_peak_mb` (reserved by torch's allocator) and
    `host_peak_mb` (resident set); None when no timing job reported them."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in the timing job's phases (peaks_s, timer_s, baselines_s [cumulative from
    the job's start], load_s, first_call_s, candidate_s, breakdown_s, total_s)."""
    host_ms: dict[str, float] = field(default_factory=dict)
    """Host time to queue one forward (Python, launches), per timed callable; not in speedups."""
    notes: list[str] = field(default_factory=list)
    method: str = (
        "padded CUDA events: L2 flushed and device synchronised before each repetition, a spin "
        "kernel hides the host's launch cost, end event on the caller's stream; checked against "
        "the profiler's per-kernel times (every stream), re-timed until torch.cuda.synchronize() "
        "when kernels ran outside the caller's stream"
    )
    torch_version: str = ""
    triton_version: str = ""
    duration_s: float = 0.0
    kernelbench: dict[str, Any] | None = None
    """With `ProfileOptions.kernelbench`: KernelBench's timing of eager and the candidate
    (`{"eager": {mean, std, min, max, num_trials, warmup}, "candidate": {...}, "speedup": x}`,
    ms; speedup = eager mean / candidate mean), beside this module's own numbers."""
    trace: str | None = field(default=None, repr=False)
    """With `ProfileOptions.trace`: the profiler pass as Chrome trace JSON text (not in
    `to_dict`: write it with `write_trace`)."""

    def write_trace(self, path: str | os.PathLike[str]) -> bool:
        """Write the Chrome/Perfetto trace to `path`; False when there is none."""
        if not self.trace:
            return False
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.trace)
        return True

    @property
    def chosen_speedup(self) -> Speedup | None:
        return {
            "eager": self.speedup_eager,
            "compile": self.speedup_compile,
            "best": self.speedup_best,
        }.get(self.baseline)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("trace", None)  # megabytes of JSON; `write_trace` writes it
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def feedback(self) -> str:
        """What the refinement prompt shows the LLM (and a person reads first)."""
        return render_profile(self)

    def roofline_text(self) -> str:
        assert self.roofline is not None
        return "Roofline, " + roofline_line(self.roofline) + "."

    def kernel_text(self, k: KernelTime) -> str:
        """One kernel's line; FLOP rates only for a kernel doing (nearly) all of the forward."""
        r = self.roofline
        return kernel_line(
            k,
            self.peaks,
            bound=r.bound if r is not None else "unknown",
            flops=r.flops if r is not None and k.share >= 0.9 else None,
            compute_roof=r.compute_roof if r is not None else "fp32",
        )


def render_profile(r: ProfileResult) -> str:
    """Pure: the result as a few lines of text."""
    lines = [f"Profile: {r.status}. {r.message}"]
    if r.status in ("not_verified",) and r.verdict is not None and not r.verdict.correct:
        lines.append(r.verdict.feedback())
        return "\n".join(lines)
    if r.candidate is not None:
        c = r.candidate
        timing = f"Candidate {format_ms(c.median_ms)} (p20-p80 {format_ms(c.p20_ms)}-{format_ms(c.p80_ms)}, n={c.n})"
        if r.eager is not None:
            timing += f"; eager {format_ms(r.eager.median_ms)} -> {format_speedup(r.speedup_eager)}"
        if r.compiled is not None:
            timing += f"; torch.compile {format_ms(r.compiled.median_ms)} -> {format_speedup(r.speedup_compile)}"
        if r.eager_fp32 is not None:
            timing += (
                f"; eager at full fp32 (TF32 off) {format_ms(r.eager_fp32.median_ms)} -> "
                f"{format_speedup(r.speedup_eager_fp32)}"
            )
        if r.eager_cudnn_benchmark is not None:
            timing += (
                f"; eager with cudnn.benchmark {format_ms(r.eager_cudnn_benchmark.median_ms)} -> "
                f"{format_speedup(r.speedup_eager_cudnn_benchmark)}"
            )
        lines.append(timing + f" on {r.device}.")
    if len(r.candidate_runs) > 1:
        runs = ", ".join(format_ms(s.median_ms) for s in r.candidate_runs)
        lines.append(f"Independent sequences: {runs}.")
    if r.roofline is not None:
        lines.append(r.roofline_text())
    for k in r.kernels[:6]:
        lines.append("  " + r.kernel_text(k))
    if len(r.time_by_class) > 1 or any(t.best_us is not None for t in r.time_by_class):
        lines.append("Where the time goes (kernel time per forward, per class of layer):")
        lines += ["  " + line for line in class_lines(r.time_by_class)]
        why = slowest_class(r.time_by_class)
        if why and r.speedup_best is not None and r.speedup_best.value < 1.0:
            lines.append(f"Slower than the better baseline: {why}.")
    busy_us = sum(k.time_us for k in r.kernels)
    if r.candidate is not None and r.kernels and busy_us < 0.5 * r.candidate.median_ms * 1e3:
        lines.append(
            f"The GPU kernels account for {format_ms(busy_us / 1e3)} of the "
            f"{format_ms(r.candidate.median_ms)} a call takes: launch overhead dominates (fewer "
            "launches, less Python work in forward, or more work per launch)."
        )
    if r.status in ("slower", "ok") and r.roofline is not None:
        lines.append(_advice(r))
    for n in r.notes[:4]:
        lines.append(f"Note: {n}")
    return "\n".join(lines)


def _advice(r: ProfileResult) -> str:
    rl = r.roofline
    assert rl is not None
    if rl.fraction >= 0.8:
        return (
            "It is near the roofline: large further gains need less data moved or less arithmetic."
        )
    if rl.bound == "memory-bound":
        return (
            "Memory-bound and below the bandwidth roof: check for re-reads, uncoalesced or narrow "
            "loads, too little work in flight (tiny grids), and many small launches."
        )
    if rl.bound == "compute-bound":
        return (
            "Compute-bound and below the compute roof: use tl.dot with tiles that fill the tensor "
            "cores (bf16/tf32), more stages for latency hiding, and avoid per-element special functions."
        )
    return ""
