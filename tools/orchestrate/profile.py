"""Profiling: is a verified kernel faster on the GPU, by how much, and where does its time go?

Protocol (DESIGN.md "Profiling protocol", docs/profiling.md):
1. Verify first (`tools.orchestrate.verify`); an incorrect kernel is never timed (status `not_verified`).
2. On a CPU there is nothing to time (status `unavailable`): interpreter timings are not speed.
3. On a GPU one sandbox job (`tools.job.profile_worker.profile_job`, one per GPU at a time) times
   eager and `torch.compile` baselines and the candidate the same way: warm-up, L2 flush before
   every repetition, all streams synchronised, many repetitions, median and spread.
4. Trust checks: the candidate is timed in two independent sequences; if they disagree beyond
   the noise floor it is re-timed once, then flagged `noisy`. Its output must follow new values
   written into the same buffers (no result cached by address). A speedup over 10x is
   re-verified with 20 trials and rescaled and shifted inputs before it is believed.
5. Per-kernel breakdown (torch.profiler) and the roofline against the device's measured peaks.

Baselines are cached per (problem digest, device name, torch version, Triton version) and peaks
per device name (`tools.orchestrate.baselines`). The result and its text are `tools.orchestrate.profile_result`; the
timing job `tools.job.profile_worker`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import time
from typing import Any

from tools.checks.roofline import (
    DevicePeaks,
    KernelTime,
    TimingStats,
    format_ms,
    pool,
    roofline,
    settle,
    speedup,
    summarize,
)
from tools.checks.time_by_class import time_by_class
from tools.core.problem import Problem, read_problem
from tools.core.problem_dtype import cache_suffix
from tools.core.results import Verdict
from tools.job.profile_worker import profile_job
from tools.orchestrate.baselines import (
    CUDNN_BENCHMARK,
    cached_baselines_for,
    installed_triton_version,
    load_cache,
    remember_baselines,
)
from tools.orchestrate.profile_result import ProfileOptions, ProfileResult
from tools.orchestrate.verify import Verifier, VerifyOptions
from tools.sandboxing.limits import Limits

TIMING_MEMORY_FLOOR_MB = 16384
"""The timing job's host memory cap (resident set) for problems of a few GB or less, and when the
problem's size is unknown: torch, CUDA and an in-process Inductor compile fit in it."""


# ------------------------------------------------------------------------------------------
# The API


def profile(
    problem: str | os.PathLike[str] | Problem,
    kernel_source: str,
    *,
    verifier: Verifier | None = None,
    baseline: str | None = None,
    kernel_path: str = "candidate.py",
    device: str = "auto",
    options: ProfileOptions | None = None,
) -> ProfileResult:
    """Verify, then time a candidate against eager and torch.compile on the GPU.

    `kernel_source` is the candidate's text. `verifier` (whose sandbox also runs the timing job)
    decides the device; without one a Verifier is made for `device`. `baseline` (default
    `eager`, or `options.baseline`) decides `ok` vs `slower`; both speedups are reported."""
    start = time.monotonic()
    opts = options or ProfileOptions()
    if baseline is not None and baseline != opts.baseline:
        opts = dataclasses.replace(opts, baseline=baseline)
    prob = problem if isinstance(problem, Problem) else read_problem(problem)
    v = verifier or Verifier(VerifyOptions(device=device))
    result = _profile(prob, kernel_source, kernel_path, v, opts)
    result.duration_s = round(time.monotonic() - start, 3)
    return result


def _profile(
    prob: Problem, source: str, kpath: str, v: Verifier, opts: ProfileOptions
) -> ProfileResult:
    with tempfile.TemporaryDirectory(prefix="ta-kernels-") as compiled:
        # The verification job's compiled kernels seed the timing job of the same source, so
        # the exclusive (GPU-holding) timing job does not spend its time compiling.
        r = _verify_and_time(prob, source, kpath, v, opts, compiled)
    if r.status == "not_verified" and r.verdict is not None and r.verdict.correct:
        # Verified, then caught while being timed (a crash, a stale result, a broken rule, a
        # failed re-verification): every caller decides on `verdict`, so it must say so too.
        r.verdict = refuted(r)
    return r


REFUTED_STATUS = {"crash": "crash", "timeout": "timeout", "rules": "cheat", "stale": "cheat"}


def refuted(r: ProfileResult) -> Verdict:
    """The verdict of a kernel that passed verification but not its timing job (`r.refuted_by`
    says how) or its re-verification (`r.reverified`)."""
    if r.reverified is not None and not r.reverified.correct:
        return r.reverified
    return dataclasses.replace(
        r.verdict,
        status=REFUTED_STATUS.get(r.refuted_by or "", "runtime_error"),
        correct=False,
        message=r.message,
    )


def _verify_and_time(
    prob: Problem, source: str, kpath: str, v: Verifier, opts: ProfileOptions, compiled: str
) -> ProfileResult:
    """Verify; on a GPU, time the verified kernel in an exclusive timing job
    (`_run_timing_job`, seeded with the verification's compiled kernels in `compiled`) and
    assemble its reply; remember the baselines and re-verify an implausible speedup."""
    import torch

    base = dict(
        problem=prob.path, kernel=kpath, baseline=opts.baseline, torch_version=torch.__version__
    )
    verdict = v.verify(prob, source, kpath, triton_cache_out=compiled)
    if not verdict.correct:
        return ProfileResult(
            status="not_verified",
            verdict=verdict,
            device=v.device,
            message=f"not timed: the kernel is not verified correct ({verdict.status}); "
            "an incorrect kernel is never timed",
            **base,
        )
    if v.device != "cuda":
        return ProfileResult(
            status="unavailable",
            verdict=verdict,
            device=v.device,
            message="verified correct, but no CUDA GPU is available: speed is only measured on a "
            "GPU (Triton interpreter timings on the CPU say nothing about GPU speed)",
            **base,
        )
    outcome = _run_timing_job(prob, source, kpath, v, opts, compiled, verdict)
    result = _from_outcome(outcome, verdict, v, opts, base)
    if result.status not in ("not_verified", "unavailable"):
        remember_baselines(outcome.value, prob, opts, v.options.precision)
        _maybe_reverify(result, prob, source, kpath, v, opts)
    return result


def _run_timing_job(
    prob: Problem,
    source: str,
    kpath: str,
    v: Verifier,
    opts: ProfileOptions,
    compiled: str,
    verdict: Verdict,
) -> Any:
    """The timing job (`tools.job.profile_worker.profile_job`) of a verified kernel, alone on its
    GPU, with the cached baselines and device peaks. Returns its `JobOutcome`."""
    import torch

    cache = load_cache() if opts.use_cache else {"baselines": {}, "peaks": {}}
    cached_baselines = (
        {}
        if opts.refresh_baselines
        else cached_baselines_for(
            cache,
            prob.digest + cache_suffix(v.options.precision),
            torch.__version__,
            installed_triton_version(),
        )
    )
    atol, rtol = verdict.atol or 1e-4, verdict.rtol or 1e-4
    return v.sandbox.run(
        profile_job,
        prob.source,
        os.path.abspath(prob.path),
        source,
        os.path.basename(kpath) or "candidate.py",
        settings={
            "warmup_ms": opts.warmup_ms,
            "rep_ms": opts.rep_ms,
            "min_reps": opts.min_reps,
            "max_reps": opts.max_reps,
            "noise_floor": opts.noise_floor,
            "compile": opts.compile_baseline,
            "profile_calls": opts.profile_calls,
            "seed": v.options.seed,
            "kernelbench": opts.kernelbench,
            "trace": opts.trace,
            # the judge's fp64 rule accepted elements: the freshness check applies it too
            "fp64_rule": bool(getattr(verdict.evidence, "fp64_accepted", 0)),
            # a stochastic problem: the freshness check is statistical (tools.checks.stochastic)
            "stochastic": bool(getattr(verdict, "statistical", False)),
            # the freshness reference computes in what the judge's did (tools.orchestrate.reference)
            "reference_numerics": getattr(verdict, "reference_numerics", "exact"),
        },
        cached_baselines=cached_baselines,
        cached_peaks=cache["peaks"],
        atol=atol,
        rtol=rtol,
        limits=Limits(timeout_s=opts.timeout_s, memory_mb=timing_memory_mb(opts, verdict)),
        # Inductor's compile-worker pool would start subprocesses, which the job guard refuses.
        env={"TORCHINDUCTOR_COMPILE_THREADS": "1"},
        # nothing else on this GPU while it is timed (verification jobs may share a GPU)
        exclusive=True,
        triton_cache_in=compiled,
    )


def _from_outcome(
    outcome: Any, verdict: Verdict, v: Verifier, opts: ProfileOptions, base: dict[str, Any]
) -> ProfileResult:
    """The result of a timing job: refuted when it crashed or timed out, unavailable when it
    failed, else its reply assembled (`assemble`; a reply the harness could not have written
    refutes the kernel)."""
    if outcome.kind in ("crash", "timeout"):
        return ProfileResult(
            status="not_verified",
            verdict=verdict,
            device=v.device,
            message=f"the candidate passed verification but its timing job ended in a {outcome.kind}: "
            f"{outcome.error}",
            notes=[outcome.stderr_tail] if outcome.stderr_tail else [],
            refuted_by=outcome.kind,
            **base,
        )
    if outcome.kind == "error":
        return ProfileResult(
            status="unavailable",
            verdict=verdict,
            device=v.device,
            message=f"the timing job failed: {outcome.error[-1500:]}",
            **base,
        )
    try:
        return assemble(outcome.value, verdict, opts, **base)
    except Exception as exc:  # noqa: BLE001 - the candidate shares the job's process
        return ProfileResult(
            status="not_verified",
            verdict=verdict,
            device=v.device,
            message=f"the timing job sent a malformed reply ({type(exc).__name__}: {exc}); it "
            "was not produced by the harness as written",
            refuted_by="crash",
            **base,
        )


def timing_memory_mb(opts: ProfileOptions, verdict: Verdict) -> int:
    """The timing job's host memory cap (MB): `opts.memory_mb` when set, else derived from the
    problem's size as max(16384, 4096 + 3 x its input, output and parameter MB).

    The job's host memory grows with the problem: `get_inputs()` builds the inputs on the host
    (with whatever temporaries it makes), and they stay there as the originals restored after the
    reference on new values, and the model is built on the host before it moves; 4096 MB covers
    torch, CUDA and Inductor. The size comes from the verification's footprint figures
    (`verdict.evidence.footprint`: `input_bytes` and `output_bytes`, `param_bytes` when given); a
    verdict without them gets the floor, which suits problems of a few GB (6.9 GB host peak
    measured for a 6 GiB ReLU)."""
    if opts.memory_mb is not None:
        return opts.memory_mb
    footprint = getattr(verdict.evidence, "footprint", None)
    sizes = [_figure(footprint, k) for k in ("input_bytes", "output_bytes")]
    if footprint is None or any(v is None for v in sizes):
        return TIMING_MEMORY_FLOOR_MB
    params = _figure(footprint, "param_bytes") or 0
    problem_mb = math.ceil((sum(sizes) + params) / 2**20)
    return max(TIMING_MEMORY_FLOOR_MB, 4096 + 3 * problem_mb)


def _figure(footprint: Any, name: str) -> int | None:
    """A non-negative byte count from a footprint (a dict or an object), or None."""
    if isinstance(footprint, dict):
        value = footprint.get(name)
    else:
        value = getattr(footprint, name, None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value)


def assemble(
    data: dict[str, Any], verdict: Verdict, opts: ProfileOptions, **base: Any
) -> ProfileResult:
    """Turn a timing job's raw data into the result. Pure: no I/O (testable on CPU).

    In order: the result opened with the device and the baselines (`_opened`); refuted where
    the job failed, broke the rules or returned a stale result (`_refused`); the candidate's
    timings, speedups and evidence (`_timed`); the status against `opts.baseline`."""
    r = _opened(data, verdict, base)
    if r.status == "unavailable":
        return r
    b = data.get("baselines") or {}
    if _refused(r, data):
        return r
    noisy = _timed(r, data, b, opts)
    chosen = r.chosen_speedup
    if noisy:
        r.status = "noisy"
        runs = ", ".join(format_ms(s.median_ms) for s in r.candidate_runs)
        r.message = (
            f"timings not trusted: {len(r.candidate_runs)} independent sequences of the same "
            f"kernel disagree ({runs}) beyond the noise floor; re-run on a quiet GPU"
        )
    elif chosen is None:
        r.status = "unavailable"
        r.message = f"the {opts.baseline} baseline could not be timed; see the notes"
    elif chosen.value > 1.0:
        r.status = "ok"
        r.message = f"correct and {chosen.value:.2f}x faster than {_baseline_name(opts.baseline)}"
    else:
        r.status = "slower"
        r.message = (
            f"correct but {1 / chosen.value:.2f}x slower than {_baseline_name(opts.baseline)}"
        )
    return r


def _opened(data: dict[str, Any], verdict: Verdict, base: dict[str, Any]) -> ProfileResult:
    """The result with what the job measured before the candidate: the device, its peaks, the
    baselines; status `unavailable` when the job found no GPU, else `ok` for now."""
    base.setdefault("torch_version", data.get("torch_version", ""))
    base["torch_version"] = data.get("torch_version") or base["torch_version"]
    r = ProfileResult(
        status="ok",
        message="",
        verdict=verdict,
        device=data.get("device", "cuda"),
        triton_version=data.get("triton_version", ""),
        notes=list(data.get("notes", [])),
        memory=data.get("memory"),
        timings={k: float(v) for k, v in (data.get("timings") or {}).items()},
        **base,
    )
    if data.get("peaks"):
        p = data["peaks"]
        r.peaks = DevicePeaks(
            device=p["device"],
            bandwidth=p["bandwidth"],
            flops=dict(p["flops"]),
            how=p.get("how", ""),
        )
    if "error" in data and data.get("stage") == "device":
        r.status, r.message = "unavailable", data["error"]
        return r
    b = data.get("baselines") or {}
    r.baselines_cached = bool(data.get("baselines_from_cache"))
    r.eager = _stats(b, "eager")
    r.compiled = _stats(b, "compile")
    r.eager_fp32 = _stats(b, "eager_fp32")
    if b.get("eager_fp32_error"):
        r.notes.append(f"eager at full fp32 not timed: {b['eager_fp32_error']}")
    r.eager_cudnn_benchmark = _stats(b, CUDNN_BENCHMARK)
    if b.get(f"{CUDNN_BENCHMARK}_error"):
        r.notes.append(f"eager with cudnn.benchmark not timed: {b[f'{CUDNN_BENCHMARK}_error']}")
    if b.get("compile_error"):
        r.notes.append(f"torch.compile baseline unavailable: {b['compile_error']}")
    return r


def _refused(r: ProfileResult, data: dict[str, Any]) -> bool:
    """Whether the timing job refutes the verified kernel (status `not_verified`, `refuted_by`
    and the message set): it failed while being timed, broke the sandbox rules, or the
    freshness check found a stale result. Records the freshness finding either way."""
    if "error" in data:
        r.status = "not_verified"
        r.message = (
            f"the candidate passed verification but failed while being timed ({data['error']})"
        )
        r.notes.append(data.get("traceback", "")[-1500:])
        return True
    if data.get("violations"):
        r.status, r.refuted_by = "not_verified", "rules"
        r.message = (
            f"the candidate broke the sandbox rules while being timed: {data['violations'][0]}"
        )
        return True
    fresh = data.get("fresh") or {}
    r.freshness = fresh
    if not fresh.get("ok", True):
        r.status, r.refuted_by = "not_verified", "stale"
        r.message = f"not a real kernel result: {fresh.get('message')}"
        return True
    return False


def _timed(r: ProfileResult, data: dict[str, Any], b: dict[str, Any], opts: ProfileOptions) -> bool:
    """The candidate's timed sequences (pooled where they agree), its speedups over the
    baselines, the per-kernel breakdown and time by class, the trace, KernelBench's numbers,
    host time and the roofline. Returns whether the sequences disagree (noisy)."""
    samples = data["candidate_samples"]
    r.candidate_runs = [summarize(s) for s in samples]
    keep, noisy = settle(r.candidate_runs, opts.noise_floor)
    r.candidate = pool([samples[i] for i in keep])
    if r.eager is not None:
        r.speedup_eager = speedup(r.eager, r.candidate)
    if r.compiled is not None:
        r.speedup_compile = speedup(r.compiled, r.candidate)
    if r.eager_fp32 is not None:
        r.speedup_eager_fp32 = speedup(r.eager_fp32, r.candidate)
    if r.eager_cudnn_benchmark is not None:  # evidence beside the bar, never the bar
        r.speedup_eager_cudnn_benchmark = speedup(r.eager_cudnn_benchmark, r.candidate)
    timed = [s for s in (r.speedup_eager, r.speedup_compile) if s is not None]
    r.speedup_best = min(timed, key=lambda s: s.value) if timed else None
    r.kernels = [KernelTime(**k) for k in data.get("kernels", [])]
    if r.kernels:
        r.time_by_class = time_by_class(
            data.get("kernels", []), b.get("eager_kernels"), b.get("compile_kernels")
        )
    r.trace = data.get("trace") if isinstance(data.get("trace"), str) else None
    r.kernelbench = kernelbench_summary(data.get("kernelbench"))
    r.host_ms = {
        k: float(v)
        for k, v in (
            ("eager", b.get("eager_host_ms")),
            ("compile", b.get("compile_host_ms")),
            ("candidate", data.get("candidate_host_ms")),
        )
        if isinstance(v, (int, float))
    }
    bound = host_bound_note(r.host_ms, r.candidate.median_ms)
    if bound:
        r.notes.append(bound)
    work = data.get("work") or {}
    if r.peaks is not None and work:
        roof, peak = r.peaks.flops_for(work.get("dtype", "torch.float32"))
        r.roofline = roofline(
            nbytes=work["bytes"],
            flops=work["flops"],
            time_ms=r.candidate.median_ms,
            peak_bandwidth=r.peaks.bandwidth,
            peak_flops=peak,
            compute_roof=roof,
        )
    return noisy


def kernelbench_summary(kb: Any) -> dict[str, Any] | None:
    """The timing job's KernelBench-method numbers with their speedup (eager mean over the
    candidate's), or None when absent or malformed."""
    if not isinstance(kb, dict):
        return None
    out: dict[str, Any] = {}
    for who in ("eager", "candidate"):
        st = kb.get(who)
        if isinstance(st, dict) and isinstance(st.get("mean"), (int, float)):
            out[who] = {k: st[k] for k in st if isinstance(st[k], (int, float))}
    if not out:
        return None
    e, c = out.get("eager", {}).get("mean"), out.get("candidate", {}).get("mean")
    out["speedup"] = e / c if e and c and c > 0 else None
    out["method"] = (
        "KernelBench: 3 synchronised warm-up calls, 100 trials each between two CUDA events "
        "then a device synchronise, same inputs, no L2 flush; mean and std"
    )
    return out


def host_bound_note(host_ms: dict[str, float], device_ms: float) -> str | None:
    """A note when queueing the candidate's forward costs the host much more than its GPU time
    (and more than eager's): the speedup counts GPU time (the host running ahead, as in a model
    whose other layers keep the GPU busy), so such a kernel is slower than it reads when the
    host cannot run ahead. None otherwise."""
    host = host_ms.get("candidate")
    eager = host_ms.get("eager")
    if host is None or host <= 2 * device_ms or (eager is not None and host <= 1.5 * eager):
        return None
    versus = f", eager's {format_ms(eager)}" if eager is not None else ""
    return (
        f"host-bound: queueing one forward takes {format_ms(host)} of host time (Python and "
        f"launches{versus}) against {format_ms(device_ms)} on the GPU; speedups count GPU time, "
        "so where the host cannot run ahead this kernel is slower than it reads: fewer launches "
        "and less Python work in forward"
    )


def _baseline_name(b: str) -> str:
    return {"compile": "torch.compile", "best": "the better of eager and torch.compile"}.get(
        b, "eager PyTorch"
    )


def _stats(b: dict[str, Any], which: str) -> TimingStats | None:
    if f"{which}_samples" in b:
        return summarize(b[f"{which}_samples"])
    if isinstance(b.get(which), dict):
        return TimingStats(**b[which])
    return None


# ------------------------------------------------------------------------------------------
# Re-verification of implausible speedups


RESCALED_INPUTS = {
    "scaled x100": "x * 100.0",
    "shifted +3": "x + 3.0",
}


def rescaled_problem(prob: Problem, expression: str, label: str) -> Problem:
    """The problem with every floating-point tensor from get_inputs() transformed by
    `expression` (in `x`): other input distributions for re-verification."""
    wrapper = f"""

# --- triton-agent profile: re-verification with other inputs ({label}) ---
import torch as _ta_torch

_ta_original_get_inputs = get_inputs


def get_inputs():
    return [
        ({expression}) if isinstance(x, _ta_torch.Tensor) and x.is_floating_point() else x
        for x in _ta_original_get_inputs()
    ]
"""
    return Problem(
        path=prob.path,
        name=f"{prob.name}[{label}]",
        source=prob.source + wrapper,
        size_constants=dict(prob.size_constants),
    )


def _maybe_reverify(
    r: ProfileResult, prob: Problem, source: str, kpath: str, v: Verifier, opts: ProfileOptions
) -> None:
    best = max(
        (s.value for s in (r.speedup_eager, r.speedup_compile) if s is not None), default=0.0
    )
    if best <= opts.reverify_above:
        return
    strict = Verifier(
        dataclasses.replace(v.options, trials=opts.reverify_trials), sandbox=v.sandbox
    )
    # the rescaled problems without the contract's own scale trial on top (x100 of x100 is
    # x10,000: an overflow no user's inputs reach)
    rescaled = Verifier(
        dataclasses.replace(v.options, trials=opts.reverify_trials, input_scales=()),
        sandbox=v.sandbox,
    )
    checks = [("plain", prob, strict)] + [
        (label, rescaled_problem(prob, expr, label), rescaled)
        for label, expr in RESCALED_INPUTS.items()
    ]
    for label, p, verifier in checks:
        verdict = verifier.verify(p, source, kpath)
        r.reverified = verdict
        if not verdict.correct:
            r.status = "not_verified"
            r.message = (
                f"a {best:.1f}x speedup was not believed: re-verification with "
                f"{opts.reverify_trials} trials ({label} inputs) failed: {verdict.message}"
            )
            return
    r.notes.insert(
        0,
        f"speedup {best:.1f}x > {opts.reverify_above:.0f}x, so the kernel was re-verified "
        f"with {opts.reverify_trials} trials on the original, scaled x100 and shifted +3 "
        "inputs: correct on all",
    )
