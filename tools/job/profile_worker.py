"""The timing job. Runs ONLY inside a sandbox job process on a GPU (`tools.sandboxing.sandbox`), one per GPU
at a time, after the candidate was verified correct.

Order inside the job matters for honesty:
1. device peaks (when not cached), the problem, its inputs, the bytes/FLOPs of one forward, and
   the reference outputs for the freshness check are all computed *before* the candidate's code
   is imported, and so are the eager and `torch.compile` baselines: an imported candidate could
   patch torch and slow the baselines down.
2. the candidate is timed in two independent sequences (a third when they disagree);
3. a torch.profiler pass gives the per-kernel breakdown, a launch hook the bytes each Triton
   kernel was handed;
4. freshness: before every timed call (baselines and candidate alike, outside the timed region)
   new values are written *in place* into the inputs, so no timed call sees inputs an earlier
   call saw and a kernel that memoises on their contents never profits; one candidate call of
   the first sequence, drawn at random, gets the freshness check's values, whose reference was
   computed before the candidate was loaded, and its output is compared right after it: a
   kernel that caches its result by data pointer, or skips the work on some timed calls, fails.
5. just before the candidate's code is loaded the job gives up its privileges
   (`tools.sandboxing.job_process.drop_privileges`; `result["isolation"]` says how far it got).

Timing method: `tools.checks.timing`; the freshness check: `tools.checks.freshness`; device peaks and the
per-kernel breakdown: `tools.job.gpu_measures`.

Memory: KernelBench's inputs reach 6.4 GB (a ReLU on 4096 x 393216 fp32), so the job keeps few
full-size tensors alive: the inputs themselves are the only input set when a set is large (no
clone), the reference on new values is computed in those same buffers (their values restored from
the host afterwards), FLOPs are counted on them, every phase's outputs are freed, and the
freshness comparison is chunked (`tools.checks.compare`). At the peak: one input set and two outputs
(the reference on new values, and the call being timed): 18.8 GiB reserved for that ReLU on an
H200 (6 GiB a tensor). Before, four input sets and two outputs were alive, and the freshness
check's float64 copies and temporaries came on top: 96.3 GiB, about 16 tensors' worth.
`result["memory"]` has the job's GPU and host peaks.
"""

from __future__ import annotations

import os
import statistics
import time
import traceback
from typing import Any

import torch

from tools.checks.compare import normalise_outputs
from tools.checks.freshness import (
    FRESH_SEED_OFFSET,
    check_freshness,
    fill_fresh,
    fresh_finding,
    fresh_moments,
    has_floating,
    host_originals,
    reference_on_fresh,
    refresher,
)
from tools.checks.precision import full_fp32
from tools.checks.stochastic import fresh_check, reference_trial_on_fresh
from tools.checks.timing import (
    Freshness,
    Timer,
    independent_runs,
    input_sets,
    reference_repeats,
    time_repeats,
    timing_sets,
    uncounted_work,
)
from tools.job import guard
from tools.job.gpu_measures import breakdown, measure_peaks
from tools.job.job_common import (
    _copy_matching_weights,
    _device_context,
    _sync,
    build_model,
    exec_module,
    job_device,
    load_problem,
    make_inputs,
    peak_memory,
)
from tools.orchestrate.baselines import cache_covers, time_eager_cudnn_benchmark
from tools.orchestrate.reference import reference_numerics
from tools.sandboxing.job_process import drop_privileges

MAX_TRACE_CHARS = 64 << 20
"""A Chrome trace handed back is cut here (10 profiled forwards are a few hundred KB)."""


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


def _kernels_or_none(call: Any, sets: list, settings: dict) -> list | None:
    """A baseline's per-kernel breakdown (`tools.job.gpu_measures.breakdown`), None where the
    profiler fails: evidence for the report's per-layer-class comparison, never a verdict."""
    try:
        rows, _ = breakdown(call, sets, int(settings["profile_calls"]))
    except Exception:  # noqa: BLE001
        return None
    return [{"name": r["name"], "time_us": r["time_us"], "calls": r["calls"]} for r in rows]


def tf32_in_eager(model: Any) -> bool:
    """Whether eager runs this model with TF32 where the judge's reference does not: PyTorch's
    TF32 switches are on (cuDNN's is by default) and the model holds a module cuDNN runs
    (convolutions, recurrent layers). A functional `F.conv2d` in forward is not seen."""
    if not (torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32):
        return False
    kinds = (torch.nn.modules.conv._ConvNd, torch.nn.RNNBase)
    return (
        any(isinstance(m, kinds) for m in model.modules()) if hasattr(model, "modules") else False
    )


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
    """Time the baselines and the candidate on this job's GPU. Returns raw samples and evidence.

    The steps, in the order the module's docstring explains: the device and the timer
    (`_device_and_timer`), everything before the candidate's code (`_before_candidate`); then
    the privileges dropped and the candidate loaded (`_isolate`, `_load_candidate`), timed
    (`_time_candidate`) and its freshness judged (`_freshness_after_timing`, or `fresh_check`
    for a stochastic problem). This frame holds the freshness references until they go."""
    if job_device() != "cuda" or not torch.cuda.is_available():
        return {"error": "no CUDA device in the timing job", "stage": "device"}
    result, timer, t0 = _device_and_timer(settings, cached_peaks)
    seed = int(settings.get("seed", 42))
    with _device_context():
        prepared = _before_candidate(
            problem_source, problem_path, settings, cached_baselines, result, timer, t0,
            (atol, rtol),
        )  # fmt: skip
        init, model, sets, refresh, write_fresh = prepared[:5]
        fresh_trial, fresh_ref, fresh_ref64, fresh_allow, fresh_caps = prepared[5:]
        del prepared

        # ---- from here on, the candidate's code is loaded ----
        violations_before, t_load = _isolate(result, kernel_source, kernel_path)
        try:
            model_new = _load_candidate(kernel_source, kernel_path, init, model, seed)
        except BaseException as exc:  # noqa: BLE001 - a candidate's SystemExit is its fault too
            return {**result, **_error("candidate load", exc), "memory": peak_memory()}

        def candidate(args: list) -> Any:
            with torch.no_grad():
                return model_new(*args)

        t1 = time.perf_counter()
        result["timings"]["load_s"] = t1 - t_load
        if fresh_trial is None:
            # The freshness check as one of the timed calls (a stochastic problem's is
            # statistical, after the timing)
            judge_probe = _fresh_probe(
                (fresh_ref, fresh_ref64, fresh_allow, fresh_caps), atol, rtol
            )
            timer.fresh = Freshness(refresh=refresh, probe=write_fresh, check=judge_probe)
        try:
            _time_candidate(result, timer, candidate, sets, settings, t1)
            fresh_refs = (fresh_ref, fresh_ref64, fresh_allow, fresh_caps)
            result["fresh"] = _freshness_after_timing(
                timer.fresh, candidate, sets[0], write_fresh, fresh_refs, atol, rtol
            )
            timer.fresh = None
            del fresh_ref, fresh_ref64, fresh_allow, fresh_caps, fresh_refs
            if fresh_trial is None:
                result["fresh"] = _repeat_check(result, timer, candidate, sets[0], refresh)
            if fresh_trial is not None:
                # No value of a stochastic output can match the reference's: the check above
                # says nothing; the candidate's runs on the fresh values are judged against the
                # reference's statistically (docs/verification.md, "Stochastic problems").
                result["fresh"] = fresh_check(
                    candidate, sets[0], write_fresh, fresh_trial, atol, rtol
                )
                del fresh_trial
        except BaseException as exc:  # noqa: BLE001
            return {**result, **_error("candidate run", exc), "memory": peak_memory()}
        result["violations"] = list(guard.VIOLATIONS[violations_before:])
    result["timings"]["total_s"] = time.perf_counter() - t0
    result["memory"] = peak_memory()
    return result


def _before_candidate(
    problem_source: str,
    problem_path: str,
    settings: dict[str, Any],
    cached_baselines: dict[str, dict[str, Any]],
    result: dict[str, Any],
    timer: Timer,
    t0: float,
    tolerance: tuple[float, float],
) -> tuple:
    """Everything before the candidate's code is loaded: the problem and its inputs on the GPU
    (`_problem_on_gpu`), the work of one forward, the freshness references
    (`_fresh_references`, at `tolerance`), the timing sets, the baselines (`_time_baselines`).
    Returns (init arguments, model, sets, refresher, `write_fresh`, the stochastic reference
    trial or None, the freshness reference, its fp64 version, allowance and caps or None)."""
    seed = int(settings.get("seed", 42))
    init, model, base, originals = _problem_on_gpu(problem_source, problem_path, seed)
    work = _work(model, base)
    result["work"] = work

    moments = fresh_moments(base)

    def write_fresh(bufs: list) -> None:
        fill_fresh(bufs, seed + FRESH_SEED_OFFSET, moments)

    fresh = _fresh_references(model, base, originals, write_fresh, seed, settings, tolerance)
    del originals
    torch.cuda.empty_cache()
    sets, refresh = _timing_sets(result, timer, base, work, moments)

    def eager(args: list) -> Any:
        with torch.no_grad():
            return model(*args)

    cached = cached_baselines.get(result["device"]) or {}
    _time_baselines(result, timer, model, eager, sets, settings, cached)
    if not settings.get("stochastic") and has_floating(base):  # the repeat check's yardstick
        result["reference_repeat"] = reference_repeats(timer, eager, sets[0], refresh)
    # The baselines' outputs and workspaces are garbage by now: give their blocks back so the
    # candidate starts from the problem's own tensors.
    torch.cuda.empty_cache()
    result["timings"]["baselines_s"] = time.perf_counter() - t0
    return (init, model, sets, refresh, write_fresh, *fresh)


def _device_and_timer(
    settings: dict[str, Any], cached_peaks: dict[str, dict[str, Any]]
) -> tuple[dict[str, Any], Timer, float]:
    """The job's result opened with the device (its name, L2, versions, peaks: cached, else
    measured) and the timer, calibrated. Returns (result, timer, the job's start time)."""
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
    return result, timer, t0


def _problem_on_gpu(problem_source: str, problem_path: str, seed: int) -> tuple:
    """The problem's model and inputs on the GPU: (init arguments, model, inputs, the inputs'
    values on the host for the restores of the freshness references)."""
    # Built and made as the judge builds them (`tools.job.job_common`), at the job's precision
    # (`tools.core.problem_dtype`: the baselines are timed at the dtype the kernel was verified at).
    problem = load_problem(problem_source, problem_path)
    # As constructed (training mode), like the verification's reference: eval() changed
    # BatchNorm to running statistics, and correct kernels of KernelBench's Gemm+BatchNorm
    # problems were refuted as stale by the freshness check (H200, 2026-11-30).
    model, init = build_model(problem, seed, "cuda")
    # Made on the GPU: building a 6.4 GB KernelBench input on the host took ~10 s of a
    # timing job that holds its GPU alone (H200, session 4); the originals a host copy.
    base = make_inputs(problem, seed + 1000, "cuda")
    return init, model, base, host_originals(base, base)


def _fresh_references(
    model: Any,
    base: list,
    originals: Any,
    write_fresh: Any,
    seed: int,
    settings: dict[str, Any],
    tolerance: tuple[float, float],
) -> tuple:
    """The reference's outputs on the freshness check's new values, computed before the
    candidate's code is loaded and kept (one output set) until the check, which writes the
    same values into the same buffers. Returns (a stochastic problem's reference trial or
    None, the reference, and its fp64 version, allowance and caps, or None each). The caps
    (`tools.checks.fp64_rule.excuse_cap`, per output) come from the allowance's draws counted at
    `tolerance`, the check's own (atol, rtol): the judge's cap holds here too."""
    # A stochastic problem (its forward draws from torch's RNG, judged statistically): the
    # reference's runs on the fresh values too, for the statistical freshness check.
    fresh_trial = None
    numerics = str(settings.get("reference_numerics") or "exact")  # the judge's (tools.orchestrate.reference)
    if settings.get("stochastic"):
        with reference_numerics(numerics):
            fresh_trial = reference_trial_on_fresh(model, base, originals, write_fresh)
    with reference_numerics(numerics):  # like the judge's reference
        # The judge accepted elements by its fp64 rule: the freshness check applies it too,
        # with an fp64 reference made here, before the candidate's code is loaded.
        fresh_ref64: list | None = [] if settings.get("fp64_rule") else None
        fresh_allow: list | None = [] if settings.get("fp64_rule") else None
        fresh_caps: list | None = [] if settings.get("fp64_rule") else None
        fresh_ref = reference_on_fresh(
            model,
            base,
            originals,
            write_fresh,
            fresh_ref64,
            fresh_allow,
            seed=seed + FRESH_SEED_OFFSET,
            tolerance=tolerance,
            caps_into=fresh_caps,
        )
    return fresh_trial, fresh_ref, fresh_ref64, fresh_allow, fresh_caps


def _time_baselines(
    result: dict[str, Any],
    timer: Timer,
    model: Any,
    eager: Any,
    sets: list,
    settings: dict[str, Any],
    cached: dict[str, Any],
) -> None:
    """Eager and `torch.compile` timed (or taken from the cache), and KernelBench's method on
    eager when asked: `result["baselines"]`, before the candidate is loaded."""
    want_compile = bool(settings.get("compile", True))
    if cache_covers(cached, want_compile=want_compile, tf32=tf32_in_eager(model)):
        result["baselines"] = cached
        result["baselines_from_cache"] = True
    else:
        baselines: dict[str, Any] = {"eager_samples": timer.measure(eager, sets)}
        baselines["eager_host_ms"] = timer.last_host_ms
        # where eager's time goes, per kernel (`tools.checks.time_by_class`: per layer class beside
        # the candidate's); evidence for the report, never a failed timing
        baselines["eager_kernels"] = _kernels_or_none(eager, sets, settings)
        if tf32_in_eager(model):
            # The same eager at full fp32 (TF32 off), the precision the candidate must meet:
            # for the report, beside the bar (PyTorch's defaults, the speed the user has).
            try:
                with full_fp32():
                    baselines["eager_fp32_samples"] = timer.measure(eager, sets)
            except Exception as exc:  # evidence for the report, never a failed timing
                baselines["eager_fp32_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        time_eager_cudnn_benchmark(baselines, timer, eager, sets)  # beside the bar (issue 35)
        if want_compile:
            _time_compiled(baselines, timer, model, sets, settings)
        result["baselines"] = baselines
        result["baselines_from_cache"] = False
    if settings.get("kernelbench"):
        # KernelBench's own method beside ours, eager timed before the candidate is loaded
        result["kernelbench"] = {"eager": timer.kernelbench(eager, sets[0])}


def _time_compiled(
    baselines: dict[str, Any], timer: Timer, model: Any, sets: list, settings: dict[str, Any]
) -> None:
    """The `torch.compile` baseline, compiled in this process; one that cannot compile is a
    note (`compile_error`), not a failure. The compiled model goes when this returns."""
    try:
        compile_in_this_process()
        compiled = torch.compile(model)

        def run_compiled(args: list) -> Any:
            with torch.no_grad():
                return compiled(*args)

        baselines["compile_samples"] = timer.measure(run_compiled, sets)
        baselines["compile_host_ms"] = timer.last_host_ms
        baselines["compile_kernels"] = _kernels_or_none(run_compiled, sets, settings)
    except Exception as exc:  # a baseline that cannot compile is a note, not a failure
        baselines["compile_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"


def _timing_sets(
    result: dict[str, Any], timer: Timer, base: list, work: dict[str, Any], moments: Any
) -> tuple[list, Any]:
    """The input sets the timed calls rotate through (the inputs themselves first) and the
    refresher that gives every timed call from here on new input values
    (`tools.checks.timing.Freshness`, armed on `timer`). Returns (sets, refresher)."""
    k = input_sets(work["input_bytes"], result["l2_bytes"])
    sets = timing_sets(base, k)
    result["input_sets"] = k
    refresh = refresher(moments)
    timer.fresh = Freshness(refresh=refresh)
    if not has_floating(base):
        result["notes"].append(
            "no floating-point inputs to write new values into: the timed calls repeat "
            "their inputs, so a result cached by their contents is not excluded"
        )
    return sets, refresh


def _isolate(result: dict[str, Any], kernel_source: str, kernel_path: str) -> tuple[int, float]:
    """Just before the candidate's code is loaded: the privileges dropped (`result["isolation"]`
    says how far), the candidate written into the job's directory. Returns (the guard's
    violations so far, the time the load starts)."""
    result["isolation"] = drop_privileges(cuda_ipc=False)  # (hands nothing over)
    violations_before = len(guard.VIOLATIONS)
    with open(_local_path(kernel_path), "w") as f:
        f.write(kernel_source)
    return violations_before, time.perf_counter()


def _local_path(kernel_path: str) -> str:
    """Where the candidate is written (its tracebacks point there): the job's directory."""
    return os.path.join(os.getcwd(), os.path.basename(kernel_path) or "candidate.py")


def _load_candidate(kernel_source: str, kernel_path: str, init: list, model: Any, seed: int) -> Any:
    """Import the candidate (written by `_isolate`) and build its `ModelNew` like the
    reference, the reference's weights copied where names match. Raises what it raises."""
    cand = exec_module(kernel_source, _local_path(kernel_path), "candidate")
    torch.manual_seed(seed)
    model_new = cand.ModelNew(*init)
    if isinstance(model_new, torch.nn.Module):
        model_new = model_new.to("cuda")
        _copy_matching_weights(model, model_new)
    return model_new


def _fresh_probe(refs: tuple, atol: float, rtol: float) -> Any:
    """The freshness check run on one timed call (`tools.checks.timing.Freshness`'s `check`); `refs`:
    (the freshness reference, its fp64 version, allowance and caps: `_fresh_references`)."""

    def judge_probe(outputs: Any, _refs=refs) -> dict[str, Any]:
        ref, ref64, allow, caps = _refs
        return fresh_finding(
            outputs,
            ref,
            atol,
            rtol,
            expected64=ref64,
            allowance64=allow,
            excuse_caps=caps,
            during_timing=True,
        )

    return judge_probe


def _time_candidate(
    result: dict[str, Any],
    timer: Timer,
    candidate: Any,
    sets: list,
    settings: dict[str, Any],
    t1: float,
) -> None:
    """The candidate's first call (it compiles: timed apart), its independent timed sequences,
    KernelBench's method when asked, the per-kernel breakdown (and Chrome trace), and a timing
    until every stream is done where the breakdown shows work the sequences did not count."""
    candidate(sets[0])  # the first call compiles: timed apart, for the record
    torch.cuda.synchronize()
    result["timings"]["first_call_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    runs = independent_runs(timer, candidate, sets, settings["noise_floor"])
    result["candidate_host_ms"] = timer.last_host_ms
    result["candidate_samples"] = runs
    result["timings"]["candidate_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    if settings.get("kernelbench"):
        result["kernelbench"]["candidate"] = timer.kernelbench(candidate, sets[0])
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
        result["notes"].append(f"per-kernel breakdown unavailable: {type(exc).__name__}: {exc}")
    result["timings"]["breakdown_s"] = time.perf_counter() - t1
    why = uncounted_work(runs, result["kernels"])
    if why:
        # Fall back to timing until every stream is done, host launch cost included: never
        # flattering, and it counts side-stream work whatever stream it ran on.
        runs = independent_runs(timer, candidate, sets, settings["noise_floor"], pad=False)
        result["candidate_samples"] = runs
        result["notes"].append(
            f"{why}; timed instead until every stream was done, host launch cost included"
        )


def _repeat_check(
    result: dict[str, Any], timer: Timer, candidate: Any, first_set: list, refresh: Any
) -> dict[str, Any]:
    """The freshness finding with the repeat check's (`tools.checks.timing.time_repeats`: faster on
    values it has seen than on new ones is a memo decided on the device) under "repeat", and
    its refusal where it fails. Nothing to check without floating-point inputs to write new
    values into, or once the freshness check has refused."""
    fresh = result["fresh"]
    if not fresh.get("ok", True) or not has_floating(first_set):
        return fresh
    estimate = min(statistics.median(r) for r in result["candidate_samples"])
    ref = result.get("reference_repeat")  # eager timed the same two ways, before the load
    repeat = time_repeats(timer, candidate, first_set, refresh, estimate, ref)
    fresh = {**fresh, "repeat": repeat}
    if not repeat["ok"]:
        fresh.update(ok=False, message=repeat["message"])
    return fresh


def _freshness_after_timing(
    fresh: Freshness,
    candidate: Any,
    first_set: list,
    write_fresh: Any,
    refs: tuple,
    atol: float,
    rtol: float,
) -> dict[str, Any]:
    """The freshness finding: the probe's on a timed call, or (no probe ran: a stochastic
    problem, or a sequence that never armed) a check on one more call."""
    if fresh.finding is not None:
        return {**fresh.finding, "timed_call": fresh.probe_rep}
    fresh_ref, fresh_ref64, fresh_allow, fresh_caps = refs
    return check_freshness(
        candidate,
        first_set,
        write_fresh,
        fresh_ref,
        atol,
        rtol,
        expected64=fresh_ref64,
        allowance64=fresh_allow,
        excuse_caps=fresh_caps,
    )


def compile_in_this_process() -> None:
    """Make Inductor compile inside this job process.

    With more than one core Inductor starts a pool of `python` compile workers; the job's guard
    refuses that subprocess, so on the 16-core GPU machine every `torch.compile` baseline failed
    with a PermissionError (and left a guard violation). One compile thread needs no pool.
    """
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1
