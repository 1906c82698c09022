"""Job functions. These run ONLY inside sandbox job processes (`tools.sandboxing.sandbox`), never in the
agent's process: they execute the problem's and the candidate's code.

Each returns plain data (dicts of tensors / dataclasses) for the agent process to judge; the
comparison itself happens in the agent process, out of the candidate's reach.
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import secrets
import threading
import time
import traceback
from contextlib import ExitStack
from dataclasses import asdict
from typing import Any

import torch

from tools.checks.compare import normalise_outputs
from tools.job import guard
from tools.job.forward_checks import aliased, checked_outputs, mutated, refill
from tools.job.job_common import (
    ContractError,
    _clone,
    _copy_matching_weights,
    _device_context,
    _short_tb,
    _sync,
    _warm_cuda,
    build_model,
    collect_if_large,
    exec_module,
    job_device,
    load_problem,
    make_inputs,
    out_of_memory,
    peak_memory,
    reference_tensors,
    tensor_bytes,
)
from tools.job.size_guard import (
    CPU_MAX_ELEMENTS,
    CPU_MAX_FLOPS,
    estimate_work,
    install_launch_budget,
    too_large_message,
)
from tools.orchestrate.verify_options import unchecked_calls

# ------------------------------------------------------------------------------------------
# The problem job: load the problem, validate it, measure its footprint.


def problem_job(
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    trial_seed: int,
    check_size: bool = True,
) -> dict[str, Any]:
    """Check the problem once: it loads, meets the contract, runs, is deterministic or draws its
    randomness from torch's RNG only (`stochastic`: judged statistically); and measure
    its footprint (bytes of inputs, outputs and parameters, and this job's peaks), which sets
    the limits and the GPU admission of every verification of it.
    Returns {"error": message} for a problem that breaks the contract."""
    device = job_device()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with _device_context():
        try:
            mod = load_problem(problem_source, problem_path)
        except ContractError as exc:
            return {"error": str(exc)}
        est = estimate_work(mod)
        too_large = _too_large(est) if device == "cpu" and check_size else None
        if too_large:
            return too_large
        try:
            model, _ = build_model(mod, seed, device)
            timings["load"] = time.perf_counter() - t0
            inputs = make_inputs(mod, trial_seed, device)
        except ContractError as exc:
            return {"error": str(exc), "estimate": est}
        footprint = {
            "input_bytes": tensor_bytes(inputs),
            "param_bytes": tensor_bytes(list(model.state_dict().values())),
        }
        try:
            with torch.no_grad():
                out = normalise_outputs(model(*inputs))
                _sync()
        except Exception as exc:
            return {"error": f"Model.forward raised on get_inputs(): {_short_tb(exc)}"}
        nonten = [i for i, o in enumerate(out) if not isinstance(o, torch.Tensor)]
        if nonten:
            return {"error": f"Model.forward output {nonten[0]} is not a tensor"}
        footprint["output_bytes"] = tensor_bytes(out)
        expected = [{"shape": list(o.shape), "dtype": str(o.dtype)} for o in out]
        del inputs
        stochastic, error = _randomness(model, mod, trial_seed, device, seed, out)
        if error:
            return {"error": error}
        del out
        timings["reference"] = time.perf_counter() - t0 - timings["load"]
    return {
        "estimate": est,
        "footprint": footprint,
        "expected": expected,
        "stochastic": stochastic,
        "memory": peak_memory(),
        "timings": timings,
        "torch_version": torch.__version__,
    }


def _too_large(est: dict[str, Any]) -> dict[str, Any] | None:
    """The problem job's reply for a problem too large for the CPU interpreter (by its
    estimated elements moved and FLOPs), else None."""
    moved = (est.get("input_elements") or 0) + (est.get("output_elements") or 0)
    flops = est.get("flops") or 0
    if moved > CPU_MAX_ELEMENTS or flops > CPU_MAX_FLOPS:
        return {"error": too_large_message(moved, flops), "too_large": True, "estimate": est}
    return None


def _randomness(
    model: Any, mod: Any, trial_seed: int, device: str, seed: int, out: list
) -> tuple[bool, str | None]:
    """Whether the reference draws from torch's RNG (stochastic: its outputs `out` change under
    another RNG state), and the error when its randomness is not torch's (the same RNG state
    gives other outputs). Returns (stochastic, error or None)."""
    # Same inputs again (regenerated: the forward may have changed them), another RNG state.
    again = _forward_under_rng(model, mod, trial_seed, device, seed + 7)
    stochastic = not _same_outputs(out, again)
    if stochastic:
        # Dropout (or other draws from torch's RNG) would show. A stochastic problem is
        # judged statistically (tools.checks.stochastic), provided the randomness is torch's: the
        # same RNG state must give the same outputs again.
        repeat = _forward_under_rng(model, mod, trial_seed, device, seed + 7)
        if not _same_outputs(again, repeat):
            return stochastic, (
                "the reference is non-deterministic beyond torch's random number "
                "generator: two forwards on the same inputs under the same RNG state differ "
                "(time, threads, unseeded numpy/random, nondeterministic GPU atomics?). "
                "Randomness from torch's RNG (dropout, rand_like, bernoulli) is judged "
                "statistically; other randomness cannot be judged"
            )
    return stochastic, None


def _forward_under_rng(model, mod, trial_seed: int, device: str, rng_seed: int) -> list:
    """The model's outputs on the trial's inputs (made again) under RNG state `rng_seed`."""
    inputs = make_inputs(mod, trial_seed, device)
    torch.manual_seed(rng_seed)
    with torch.no_grad():
        out = normalise_outputs(model(*inputs))
        _sync()
    return out


def _same_outputs(a: list, b: list) -> bool:
    from tools.checks.compare import allclose

    return len(a) == len(b) and all(
        isinstance(y, torch.Tensor)
        and x.shape == y.shape
        and x.dtype == y.dtype
        and allclose(x, y, 1e-5, 1e-5)
        for x, y in zip(a, b)
    )


# ------------------------------------------------------------------------------------------

# The candidate job


def _map_error(exc: BaseException, path: str) -> dict[str, Any]:
    try:
        from tools.compile.error_map import map_exception

        return asdict(map_exception(exc, path))
    except Exception:  # the mapper must never hide the original error
        tb = traceback.extract_tb(exc.__traceback__)
        line = next((f.lineno for f in reversed(tb) if f.filename == path), None)
        code = next((f.line for f in reversed(tb) if f.filename == path), None)
        msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return {"kind": type(exc).__name__, "message": msg[-2000:], "line": line, "code": code}


_CUDA_FAULT = re.compile(r"CUDA error: ([^\n]+)")


def _cuda_fault(exc: BaseException) -> str | None:
    """The CUDA error in `exc` or what caused it ("an illegal memory access was encountered"),
    else None. A fault in a kernel poisons the job's CUDA context: it is a crash, not an
    exception the candidate raised."""
    from tools.compile.error_map import exception_chain

    for e in exception_chain(exc):
        m = _CUDA_FAULT.search(str(e))
        if m:
            return m.group(1).strip()
    return None


# The candidate job's steps share its state as plain tuples (immutable), built in
# `candidate_job` and `_arm_harness` before the candidate's first line: no module global and no
# attribute of an object holds a harness object where the candidate could rebind it.
#   job    (channel, problem, device, model_new, poison, aot_target, kernel_source, local_path)
#   kit    (audited, compute_blocked, is_library, export_outputs, launch_trace, with_counts,
#           backend_key, blocked_all, blocked_but_library, note_launch_times): callables, lists
#   checks (during: a watch, races, budget, observer, records)
#   found  (result, audit, tamper, refused_library, idle_runs, repeated_work): the evidence
#   watch  (Integrity, ProcessSnapshot, tamper, hooks, the hooks before the candidate ran)


def candidate_job(
    channel: Any,
    kernel_source: str,
    kernel_path: str,
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    poison: bool = True,
    aot_target: str | None = None,
) -> dict[str, Any]:
    """Import the candidate and build it like the reference; then, trial by trial as the parent
    asks (`{"trial", "seed", "scale"}`, until `{"stop"}`), make the trial's inputs from its seed
    and run the candidate twice under the audit, exporting each run's outputs for the judge
    (`tools.job.handover`) and freeing them when the parent says so. Returns the evidence (audit,
    rule violations, errors); never sees a reference output and never judges.

    The seeds arrive only after the candidate is built, one trial at a time, so nothing it
    runs before a trial can know that trial's inputs, nor how many trials there will be.

    The steps, in this order (docs/verification.md: what runs in the candidate's process, and
    when): the harness armed (`_arm_harness`), the import (`_import_candidate`), the
    constructor (`_construct`), the trials (`_run_trials` -> `_run_trial` -> `_run_call`), the
    checks after the last forward (`_close_runs`), the evidence (`_finish`)."""
    from tools.checks.audit import audited, constructor_audited
    from tools.checks.integrity import Integrity
    from tools.checks.op_profiler import ProfilerObserver
    from tools.job.handover import export_outputs

    device = job_device()
    result: dict[str, Any] = {"stage": "import", "timings": {}}
    t0 = time.perf_counter()
    records: list = []
    with ExitStack() as stack:
        stack.enter_context(_device_context())
        try:
            problem = load_problem(problem_source, problem_path)
            model, init = build_model(problem, seed, device)
        except ContractError as exc:  # the problem job already validated this
            result.update(stage="problem", error={"kind": "ProblemError", "message": str(exc)})
            return result
        armed = _arm_harness(
            device, kernel_source, kernel_path, problem, result, t0, (audited, export_outputs)
        )
        kit, races, budget, local_path, start, threads_before, record_launches = armed
        cand = _import_candidate(kernel_source, local_path, result, start)
        if cand is None:
            return result
        result["timings"]["import"] = time.perf_counter() - t0 - result["timings"]["setup"]
        result["stage"] = "construct"
        built = _construct(
            cand, model, init, seed, device, constructor_audited, result, budget, local_path, start
        )
        if built is None:
            return result
        model_new, ctor_compute = built
        del model, built  # the reference model has no business in this process from here on
        result["stage"] = "run"
        found = (result, _new_audit(ctor_compute), start[2], [], [], [])
        try:
            records = stack.enter_context(record_launches(device))
        except Exception as exc:
            result.setdefault("notes", []).append(f"launch recorder unavailable: {exc}")
        # Second snapshot: the launch recorder above legitimately patched triton's `run`.
        during = (Integrity(problem), start[1].rebased(), *start[2:])
        observer = stack.enter_context(ProfilerObserver())
        job = (channel, problem, device, model_new, poison, aot_target, kernel_source, local_path)
        checks = (during, races, budget, observer, records)
        t_run = time.perf_counter()
        channel.send({"ready": True, "timings": dict(result["timings"])})
        if not _run_trials(job, kit, checks, found):
            return result
        result["timings"]["runs"] = time.perf_counter() - t_run
        _close_runs(observer, found, during, threads_before)
    _check_integrity("by the end of the job", start, everything=True)
    _finish(found, budget, observer, records, aot_target)
    return result


def _arm_harness(
    device: str,
    kernel_source: str,
    kernel_path: str,
    problem: Any,
    result: dict[str, Any],
    t0: float,
    handed: tuple,
) -> tuple:
    """Everything before the candidate's first line, in order: the harness's set-up, the
    operator lists of the compute block, the candidate's isolation and the guard's lock-down,
    the CPU checks, the integrity snapshots. Returns (kit, races, budget, the candidate's
    path, the watch from the start, the threads before, `record_launches`); `handed`: the
    callables the job bound first (audited, export_outputs)."""
    from tools.checks.integrity import Integrity, ProcessSnapshot, hooks

    _set_up_harness(device, kernel_source)
    # harness set-up in this fresh process: problem, model, dynamo, CUDA and Triton's driver
    result["timings"]["setup"] = time.perf_counter() - t0

    # PyTorch's compute kernels, made unavailable during each forward (tools.job.compute_block;
    # the lists and the library handle are the harness's, taken before the candidate runs).
    from tools.job.compute_block import blocked_operators, compute_blocked, is_library

    backend_key = "CUDA" if device == "cuda" else "CPU"
    # Library GEMMs and convolutions are blocked too, until the first call of one: a call that
    # reached one (even below both observers: a redispatch) is recorded, where the candidate
    # cannot reach it, as `refused_library`. The strict policy's verdict is then `policy`
    # whatever the candidate did next; the job does not know the policy, so it runs that
    # forward once more with the library allowed (and keeps it allowed), which is what the
    # lenient policy judges.
    blocked_all = blocked_operators(backend_key)
    blocked_but_library = blocked_operators(backend_key, allow_library=True)
    # From here on the job refuses threads, native code and aten registrations (a
    # candidate's), and the snapshot below covers the guard's replacements.
    local_path = os.path.join(os.getcwd(), os.path.basename(kernel_path) or "candidate.py")
    _isolate(result, local_path)
    races, budget = _install_cpu_checks(device)
    integrity = Integrity(problem)
    _import_harness_modules()
    # Every launch is recorded (tools.compile.launch_record): the compile for a real target after the
    # trials (CPU), and each forward call's launch trace (the work it did).
    from tools.compile.launch_record import (
        launch_trace,
        note_launch_times,
        record_launches,
        with_counts,
    )

    process = ProcessSnapshot()
    threads_before = set(threading.enumerate())
    tamper: list[str] = []
    start = (integrity, process, tamper, hooks, hooks())
    audited, export_outputs = handed
    kit = (
        audited,
        compute_blocked,
        is_library,
        export_outputs,
        launch_trace,
        with_counts,
        backend_key,
        blocked_all,
        blocked_but_library,
        note_launch_times,
    )
    return kit, races, budget, local_path, start, threads_before, record_launches


def _new_audit(ctor_compute: list[str]) -> dict[str, Any]:
    """The audit's record, opened with the compute in the constructor (judged like compute in
    forward)."""
    audit: dict[str, Any] = {
        "triton_launches": 0,
        "kernels": [],
        "torch_compute_ops": [],
        "library_ops": [],
        "mutated_inputs": [],
        "aliased_outputs": [],
    }
    audit["torch_compute_ops"] += [f"{op} (in the constructor)" for op in ctor_compute]
    return audit


def _set_up_harness(device: str, kernel_source: str) -> None:
    """What the candidate must leave alone (timers, torch entry points, this harness, the
    guard's settings) is snapshot after this: the imports and the device's set-up that would
    otherwise happen during the candidate's first forward, and read as its doing."""
    # Importing torch._dynamo replaces torch.manual_seed (and friends) with wrapped versions.
    # The CPU forkserver preloads it; on a GPU something imports it lazily during the first
    # forward, which the integrity check read as tampering (seen on the H200, torch 2.11).
    # Import it before the snapshot so only the candidate's own patches count.
    importlib.import_module("torch._dynamo")
    importlib.import_module("tools.job.handover")
    if device == "cuda" and "_inductor" in kernel_source:
        # KernelLLM-style output imports Inductor's runtime; on CPU the shim already did this.
        # Harness set-up, so before the snapshot: whatever importing Inductor replaces (on
        # some torch version) must not be read as the candidate's doing.
        from tools.job.devshim import install_inductor_compat

        install_inductor_compat()
    if device == "cuda":
        _warm_cuda()


def _isolate(result: dict[str, Any], local_path: str) -> None:
    """Out of the judge's and the agent's reach before the candidate's first line runs: uid
    `nobody` without capabilities where the job runs as root (CAP_SYS_PTRACE would read a
    non-dumpable judge's memory), no_new_privs (tools.sandboxing.isolation); then the guard's lock-down
    (no threads, native code or aten registrations from here on)."""
    from tools.sandboxing.job_process import drop_privileges

    isolation = drop_privileges()
    result["isolation"] = asdict(isolation)
    result.setdefault("notes", []).append(
        f"isolation: {isolation.mode} (uid {isolation.candidate_uid}, "
        f"capabilities dropped: {isolation.caps_dropped})"
    )
    guard.lock_down(local_path)


def _install_cpu_checks(device: str) -> tuple[Any, Any]:
    """The interpreter's checks (CPU only, else `(None, None)`): TF32 dots and cross-program
    races (armed for each run), and each launch's time budget from its grid."""
    races = budget = None
    if device == "cpu":
        from tools.job import interp_checks

        races = interp_checks.install()  # TF32 dots; cross-program races (armed below)
        budget = install_launch_budget()  # each launch's time, from its grid
    return races, budget


def _import_harness_modules() -> None:
    """Everything the harness imports later, loaded now so that the snapshot covers it (a
    module the candidate imported first and patched would otherwise be handed over)."""
    for name in ("tools.compile.error_map", "tools.core.problem", "tools.compile.launch_record", "tools.compile.aot", "ast"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional piece; its own use reports it
            pass


def _check_integrity(where: str, watch: tuple, everything: bool = False) -> None:
    """Record in the watch's tamper list what the candidate replaced since the watch's
    snapshots (`Integrity`; with `everything`, also the whole process's `ProcessSnapshot`)
    and the hooks it left that run code outside forward."""
    snap, whole, tamper, hooks, hooks_before = watch
    changed = snap.changed() + (whole.changed() if everything else [])
    for label in changed:
        msg = f"replacing {label} ({where})"
        if msg not in tamper:
            tamper.append(msg)
    if where == "by the end of the job":  # the harness's own modes are gone by then
        return
    for hook in sorted(set(hooks()) - set(hooks_before)):
        msg = f"leaving {hook} ({where}): code that runs outside forward"
        if msg not in tamper:
            tamper.append(msg)


def _import_candidate(
    kernel_source: str, local_path: str, result: dict[str, Any], start: tuple
) -> Any:
    """Write the candidate where its tracebacks point (the job's private directory) and import
    it; the integrity check follows. None when the import raised (`result` says how)."""
    with open(local_path, "w") as f:
        f.write(kernel_source)
    try:
        cand = exec_module(kernel_source, local_path, "candidate")
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a candidate is an error too
        result.update(error=_map_error(exc, local_path), error_class="compile_error")
        _check_integrity("while importing", start, everything=True)
        result["violations"] = _violations(start[2])
        return None
    _check_integrity("at import", start, everything=True)
    return cand


def _construct(
    cand: Any,
    model: Any,
    init: Any,
    seed: int,
    device: str,
    constructor_audited: Any,
    result: dict[str, Any],
    budget: Any,
    local_path: str,
    start: tuple,
) -> tuple[Any, list[str]] | None:
    """Build the candidate's `ModelNew` like the reference: (the model, the compute its
    constructor did), or None when there is none or building it raised (`result` says how).

    The constructor, the move to the device and the weight copy run under the constructor
    rule (tools.checks.audit.ConstructorAuditMode): setup computed from constants (a causal mask, a
    table) is what the reference's own __init__ does; work on the weights (values drawn under
    the seed, or the reference's weights being copied) other than initialising them is
    forward's work done outside forward. Code the candidate hooks into the copy
    (load_state_dict hooks, `_apply`, `.to()`) runs under it too."""
    model_new_cls = getattr(cand, "ModelNew", None)
    if model_new_cls is None:
        result.update(
            error={"kind": "bad_input", "message": "the candidate defines no `ModelNew`"},
            error_class="bad_input",
        )
        return None
    try:
        torch.manual_seed(seed)
        with torch.no_grad(), constructor_audited() as (ctor_mode, _ctor_launches):
            model_new = model_new_cls(*init)
            if isinstance(model_new, torch.nn.Module):
                for t in reference_tensors(model):
                    ctor_mode.mark(t)
                model_new = model_new.to(device)
                _copy_matching_weights(model, model_new)
        ctor_compute = list(ctor_mode.compute) + list(ctor_mode.folds)
        ctor_mode.release()
    except BaseException as exc:  # noqa: BLE001
        result.update(error=_map_error(exc, local_path), error_class="runtime_error")
        _note_refusal(result, budget)
        _check_integrity("in the constructor", start)
        result["violations"] = _violations(start[2])
        return None
    _check_integrity("in the constructor", start, everything=True)
    return model_new, ctor_compute


def _run_trials(job: tuple, kit: tuple, checks: tuple, found: tuple) -> bool:
    """Trial by trial as the parent asks (`{"trial", "seed", "scale", "runs", "unchecked"}`),
    until a message without a trial or the judge's `{"stop"}`: make the trial's inputs from
    its seed and run the candidate on them (`_run_trial`). False when the job ended early
    (`result` says how)."""
    channel, problem, device = job[:3]
    result = found[0]
    blocked = kit[7]  # every compute kernel, the library's too, until a library call
    carry: list = []  # the previous call's arguments (`_arguments`)
    exempt_trial: int | None = None
    unchecked_due = True
    while True:
        msg = channel.recv()
        if not isinstance(msg, dict) or "trial" not in msg:
            return True
        trial = int(msg["trial"])
        scale = float(msg.get("scale", 1.0))
        try:
            base = make_inputs(problem, int(msg["seed"]), device, scale)
        except ContractError as exc:
            result.update(stage="problem", error={"kind": "ProblemError", "message": str(exc)})
            return False
        # The parent draws how many runs each trial gets (2 or more; unannounced), so a
        # kernel correct for exactly the documented number of calls is caught.
        runs = [str(r) for r in (msg.get("runs") or ("first", "second"))]
        calls = [(run, True) for run in runs]
        if len(runs) == 1 and unchecked_due:
            # The first unannounced trial comes after unchecked calls (fresh inputs, every
            # check but the comparison), however many `unchecked_calls` drew: the calls a
            # kernel must stay right for cannot be counted (tools.orchestrate.verify_options).
            unchecked_due = False
            n = msg.get("unchecked")
            n = n if isinstance(n, int) and 0 <= n <= 1000 else unchecked_calls()
            calls = [("unchecked", False)] * n + calls
        # Every run after a trial's first repeats its inputs bit for bit: the work it does
        # (its launch trace) must be the first run's, except in the first trial with repeats,
        # where one-time setup and autotuning happen. A random seed passed to a kernel as a
        # number is the protocol of a stochastic problem (more than two runs a trial): there
        # the numbers are left out of the trace.
        if len(runs) > 1 and exempt_trial is None:
            exempt_trial = trial
        trial_plan = (trial, scale, calls, len(runs) <= 2, trial == exempt_trial)
        ended, blocked = _run_trial(job, kit, checks, found, trial_plan, base, blocked, carry)
        del base
        if ended != "next":
            return ended == "stop"


def _run_trial(
    job: tuple,
    kit: tuple,
    checks: tuple,
    found: tuple,
    trial_plan: tuple,
    base: list,
    blocked: Any,
    carry: list,
) -> tuple[str, Any]:
    """One trial's calls (`trial_plan`: trial, scale, calls, whether launch numbers count in the
    trace, whether it is exempt from the repeated-work rule; a timed one ends with a control
    call), each on its pristine inputs (the trial's `base`, or fresh ones for an unchecked call).
    Returns how it ended ("next", "stop", "end": `result` says how), the operators blocked."""
    (problem, device), (trial, scale, calls, numbers, exempt) = job[1:3], trial_plan
    first_work: tuple[int, list] | None = None
    for k, (run, checked) in enumerate(calls):
        label = f"trial {trial}, {run} run" if checked else f"trial {trial}, unchecked call {k + 1}"
        if checked:
            pristine = base
        else:
            try:
                pristine = make_inputs(problem, secrets.randbits(31), device, scale)
            except ContractError as exc:
                found[0].update(
                    stage="problem", error={"kind": "ProblemError", "message": str(exc)}
                )
                return "end", blocked
        call = (trial, run, checked, label, numbers, exempt)
        ended, blocked, work = _run_call(
            job, kit, checks, found, call, (base, pristine), blocked, carry, first_work
        )
        first_work = work if checked and run == "first" else first_work
        if ended != "next":
            return ended, blocked
        times = found[0].get("launch_times") or [{}]  # timed (a GPU): a control call ends it
        if run == "second" and numbers and not exempt and times[-1].get("trial") == trial:
            calls.append(("control", False))  # fresh values, as a repeat (launch_times.FRESH)
    return "next", blocked


def _run_call(
    job: tuple,
    kit: tuple,
    checks: tuple,
    found: tuple,
    call: tuple,
    inputs: tuple,
    blocked: Any,
    carry: list,
    first_work: tuple[int, list] | None,
) -> tuple[str, Any, Any]:
    """One call of forward (`call`: trial, run, checked, label, numbers, exempt; `inputs`: the
    trial's base, this call's pristine inputs) under the audit, the profiler observer and the
    compute block (again with the library allowed if it first reached one), accounted; its
    outputs handed to the judge when checked, then freed under the audit. Only this frame holds
    the arguments and forward's return value. Returns how it ended ("next", "stop", "end"), the
    operators blocked from now on and the call's work (launch count and trace)."""
    channel, model_new, poison, aot_target = job[0], job[3], job[4], job[5]
    audited, compute_blocked, is_library, export_outputs = kit[:4]
    backend_key, blocked_all, blocked_but_library = kit[6:9]
    during, races, _budget, observer, records = checks
    audit, tamper, refused_library = found[1:4]
    trial, run, checked = call[:3]
    base, pristine = inputs
    args = _arguments(carry, pristine, run in ("first", "unchecked"))
    while True:  # once, or twice when the first call of a library op was refused
        first_record = _before_forward(races, records)
        refused: list[str] = []
        try:
            with (
                torch.no_grad(),
                observer.forward(),
                audited(poison=poison) as (mode, launches),
                compute_blocked(blocked, backend_key) as refused,
            ):
                out = model_new(*args)
                _sync()
                # Still inside the audit: flattening forward's return value may run the
                # candidate's code (a list subclass's __iter__, a __len__).
                flat = checked_outputs(normalise_outputs(out), tamper)
                _check_argument_classes(args, pristine, tamper)
        except BaseException as exc:  # noqa: BLE001
            gc.enable()
            _note_refused(refused, audit, tamper, refused_library, is_library)
            if blocked is blocked_all and any(map(is_library, refused)):
                # The first library call, refused and recorded: the same call once more with
                # the library allowed, for the lenient policy's verdict.
                blocked = blocked_but_library
                _before_library_retry(mode, audit, checks, first_record, aot_target)
                del exc
                collect_if_large(pristine)
                args = _clone(pristine)
                continue
            _forward_failed(exc, launches, job, checks, found, trial)
            return "end", blocked, None
        break
    seen = (mode, launches, refused, first_record)
    ended, work = _account_run(
        job, kit, checks, found, call, seen, (args, pristine, flat), first_work
    )
    if ended:
        return "end", blocked, None
    if any(map(is_library, refused)):
        blocked = blocked_but_library
    reply = _hand_over(channel, export_outputs, flat, trial, run) if checked else None
    # Freeing forward's outputs and collecting garbage can run the candidate's code (weakref
    # finalizers, __del__ of its objects): audited, and the process checked again before the
    # harness goes on (no patch may outlive this point).
    with torch.no_grad(), audited(poison=False) as (late, _late_launches):
        del flat, out
        gc.enable()
        carry.append(args)
        del args
        # The Triton interpreter leaves reference cycles that hold its launches' arguments
        # (seen on the CPU: RSS grew by two copies of a 1 GiB input per trial until the cyclic
        # collector ran); collect them with each run.
        collect_if_large(base)
    _after_release(late, tamper, during)
    return ("stop" if isinstance(reply, dict) and reply.get("stop") else "next"), blocked, work


def _before_forward(races: Any, records: list) -> int:
    """Just before forward: the inputs ready, the garbage collector off, the race check armed.
    Returns where this call's launch records begin."""
    _sync()  # inputs ready before the call: a kernel on a side stream must not race them
    # From here until the judge has compared this run's outputs, no code the candidate left
    # behind may run: automatic garbage collection is off (a finalizer of its garbage could
    # rewrite an output after the audit closed), and forward's return value lives until then
    # (freeing it could run a __del__).
    gc.disable()
    if races is not None:  # every run; tools.job.interp_checks bounds a launch's cost
        races.armed = True
    return len(records)


def _arguments(carry: list, pristine: list, refilled: bool) -> list:
    """A call's arguments: the previous call's (taken out of `carry`, so that nothing else
    holds them) refilled with this call's values when `refilled` (a result cached by data
    pointer is then stale), else, or when they do not fit, a copy of `pristine` made after
    the previous call's arguments are gone. `carry` is the one place the previous arguments
    wait between calls: passed down as an argument, they would stay alive in every caller's
    frame while the copy is made (one more copy of the inputs, 1 GiB and more)."""
    prev_args = carry.pop() if carry else None
    carry.clear()
    if type(prev_args) is not list:  # only the harness puts arguments there
        prev_args = None
    args = refill(prev_args, pristine) if refilled else None
    prev_args = None
    if args is None:
        collect_if_large(pristine)  # the previous run's arguments go first
        args = _clone(pristine)
    return args


def _after_release(late: Any, tamper: list[str], during: tuple) -> None:
    """After forward's outputs were freed: compute that a finalizer or `__del__` did then is
    tampering, and no patch may outlive this point."""
    for op in late.compute:
        msg = f"{op} when forward's outputs were freed (a finalizer or __del__)"
        if msg not in tamper:
            tamper.append(msg)
    _check_integrity("after forward's outputs were freed", during, everything=True)


def _check_argument_classes(args: list, pristine: list, tamper: list[str]) -> None:
    """The arguments are read after forward (mutation, aliasing): their class must still be the
    one the harness made (`x.__class__ = Sub` gives them properties that run then)."""
    for i, (a, b) in enumerate(zip(args, pristine)):
        if type(a) is not type(b):
            msg = f"changing the class of argument {i} (in forward)"
            if msg not in tamper:
                tamper.append(msg)


def _before_library_retry(
    mode: Any, audit: dict[str, Any], checks: tuple, first_record: int, aot_target: str | None
) -> None:
    """Before a forward that first reached a library operator runs again with the library
    allowed: keep the compute the audit saw, check integrity and races, drop its launches."""
    during, races, _budget, _observer, records = checks
    for op in mode.compute:
        if op not in audit["torch_compute_ops"]:
            audit["torch_compute_ops"].append(op)
    _check_integrity("in forward", during)
    if races is not None:
        races.check()
    if not aot_target:
        del records[first_record:]


def _forward_failed(
    exc: BaseException, launches: Any, job: tuple, checks: tuple, found: tuple, trial: int
) -> None:
    """Forward raised: the error (mapped to the candidate's line; a compile error when a
    launch failed in a kernel's body, a crash for a CUDA fault), the evidence so far."""
    kernel_source, local_path = job[6], job[7]
    during, _races, budget, observer, _records = checks
    result = found[0]
    failed_launch = launches.failed
    err = _map_error(exc, local_path)
    in_kernel = _line_in_kernel(kernel_source, err.get("line"))
    fault = _cuda_fault(exc)
    result.update(
        error=err,
        error_class="crash"
        if fault
        else "compile_error"
        if failed_launch and in_kernel
        else "runtime_error",
        error_during_launch=bool(failed_launch),
        trial=trial,
    )
    _note_refusal(result, budget)
    if out_of_memory(exc):
        result["out_of_memory"] = _short_tb(exc, limit=1)[:500]
    if fault:
        result["cuda_fault"] = fault
    _check_integrity("in forward", during)
    _end_with(found, observer, launches)
    result["memory"] = peak_memory()


def _end_with(found: tuple, observer: Any, launches: Any) -> None:
    """The evidence of a job that ends in forward (an error, a race): the violations, the audit
    with this call's launches, the refused library calls."""
    result, audit, tamper, refused_library = found[:4]
    result["violations"] = _violations(tamper + observer.tampered)
    audit["triton_launches"] += launches.count
    result["audit"] = audit
    result["refused_library"] = refused_library


def _account_run(
    job: tuple,
    kit: tuple,
    checks: tuple,
    found: tuple,
    call: tuple,
    seen: tuple,
    tensors: tuple,
    first_work: tuple[int, list] | None,
) -> tuple[bool, Any]:
    """After a forward that returned: the integrity and race checks, then its evidence into the
    audit (launches, kernels, ops, refused calls, mutated and aliased inputs, work that differs
    from the trial's first run). Returns (whether the job ended: a race, `result` says so; the
    call's work: launch count and trace)."""
    is_library, launch_trace, with_counts, note_times = kit[2], kit[4], kit[5], kit[9]
    during, races, _budget, observer, records = checks
    result, audit, tamper, refused_library, idle_runs, repeated_work = found
    trial, run, checked, label, numbers, exempt = call
    mode, launches, refused, first_record = seen
    args, pristine, flat = tensors
    _check_integrity("in forward", during)
    if races is not None and races.armed:
        races.check()
        races.armed = False
        if races.findings:
            gc.enable()
            result.update(
                error=_race_error(races.findings[0], launches.names),
                error_class="runtime_error",
                trial=trial,
            )
            _end_with(found, observer, launches)
            return True, None
    if gc.isenabled():
        msg = "switching the garbage collector back on (in forward)"
        if msg not in tamper:
            tamper.append(msg)
    if launches.count == 0:
        idle_runs.append(label)
    # called, refused, and the refusal swallowed by forward
    _note_refused(refused, audit, tamper, refused_library, is_library)
    work = (launches.count, launch_trace(records[first_record:], numbers))
    # Same arguments, same work inside each launch too (not with a stochastic problem's seeds):
    # the CPU's element counts per launch (interp_checks), a GPU's device times (every call's).
    if numbers and not exempt:  # nothing where no launch was timed (the CPU)
        note_times(result, trial, run, records[first_record:], work[1])
    if races is not None and numbers:
        work = (work[0], with_counts(work[1], races.work))
    if not job[5]:  # no compile for a real target (aot_target): the records may go
        del records[first_record:]
    if checked and run != "first" and not exempt and first_work is not None:
        diff = _work_difference(first_work, work)
        if diff:
            repeated_work.append(f"{label}: {diff}")
    _add_forward_evidence(audit, mode, launches, args, pristine, flat)
    return False, work


def _add_forward_evidence(
    audit: dict[str, Any], mode: Any, launches: Any, args: list, pristine: list, flat: list
) -> None:
    """A forward call's launches, kernels and ops into the audit, and the inputs it mutated or
    aliased. Mutation: the arguments against the pristine inputs, which the candidate never
    received (no third full-size copy kept for the check). Helpers, not loops here: a loop
    variable would keep a 1 GiB tensor alive into the next run."""
    audit["triton_launches"] += launches.count
    for name in launches.names:
        if name not in audit["kernels"]:
            audit["kernels"].append(name)
    for op in mode.compute:
        if op not in audit["torch_compute_ops"]:
            audit["torch_compute_ops"].append(op)
    for op in mode.library:
        if op not in audit["library_ops"]:
            audit["library_ops"].append(op)
    for i in mutated(args, pristine):
        if i not in audit["mutated_inputs"]:
            audit["mutated_inputs"].append(i)
    for j in aliased(args, flat):
        if j not in audit["aliased_outputs"]:
            audit["aliased_outputs"].append(j)


def _hand_over(channel: Any, export_outputs: Any, flat: list, trial: int, run: str) -> Any:
    """Export a checked run's outputs for the judge (`tools.job.handover`), wait until it has
    compared them (its reply), then remove the files. Returns the reply."""
    channel.send(
        {
            "trial": trial,
            "run": run,
            "outputs": export_outputs(flat, os.getcwd(), f"out_{trial}_{run}"),
        }
    )
    reply = channel.recv()  # the judge has compared them: they may go
    for j in range(len(flat)):
        _remove_quietly(os.path.join(os.getcwd(), f"out_{trial}_{run}_{j}.bin"))
    return reply


def _close_runs(observer: Any, found: tuple, during: tuple, threads_before: set) -> None:
    """After the last forward: stop the profiler observer, add the compute it saw and the
    dispatch audit did not, check integrity and the threads left running."""
    result, audit, tamper = found[:3]
    observer.__exit__(None, None, None)
    if observer.exit_error:
        result.setdefault("notes", []).append(
            f"the op profiler failed to stop ({observer.exit_error}): only the dispatch-mode "
            "audit saw forward's ops"
        )
    hidden, hidden_lib = observer.ops()
    if hidden and not audit["torch_compute_ops"]:
        # The profiler saw compute the dispatch mode did not: the mode was popped/bypassed.
        audit["torch_compute_ops"] += [f"{op} (hidden from the dispatch audit)" for op in hidden]
    if hidden_lib and not audit["library_ops"]:
        audit["library_ops"] += [f"{op} (hidden from the dispatch audit)" for op in hidden_lib]
    _check_integrity("after forward", during)
    alive = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    if alive:
        tamper.append(f"leaving {len(alive)} thread(s) running after forward ({alive[0].name})")


def _finish(
    found: tuple, budget: Any, observer: Any, records: list, aot_target: str | None
) -> None:
    """The evidence of a job that ran every trial the parent asked for, and the compile for a
    real target (`aot_target`) of every launch recorded."""
    result, audit, tamper, refused_library, idle_runs, repeated_work = found
    result["audit"] = audit
    result["idle_runs"] = idle_runs
    result["repeated_work"] = repeated_work
    result["refused_library"] = refused_library
    if budget is not None and budget.slow:
        result.setdefault("notes", []).extend(budget.slow[:3])
    result["violations"] = _violations(tamper + observer.tampered)
    result["stage"] = "done"
    result["memory"] = peak_memory()
    if aot_target and records:
        t_aot = time.perf_counter()
        try:
            from tools.compile.aot import aot_compile_all

            resources, errors = aot_compile_all(records, aot_target)
            result["resources"] = [asdict(r) for r in resources]
            result["aot_errors"] = [asdict(e) for e in errors]
        except Exception as exc:
            result.setdefault("notes", []).append(f"ahead-of-time compile unavailable: {exc}")
        result["timings"]["aot"] = time.perf_counter() - t_aot


def _note_refused(
    refused: list[str], audit: dict[str, Any], tamper: list[str], library: list[str], is_library
) -> None:
    """Record the operators `compute_blocked` refused in one forward call: a library GEMM or
    convolution in `library` (and the audit's library list), any other PyTorch compute as
    tampering (it was reached below the observers, or called and its refusal swallowed)."""
    for op in refused:
        if is_library(op):
            name = "aten." + op.removeprefix("aten.").split(".")[0]
            if name not in library:
                library.append(name)
            if name not in audit["library_ops"]:
                audit["library_ops"].append(name)
            continue
        msg = f"calling {op} in forward (PyTorch compute: its kernel is blocked there)"
        if msg not in tamper:
            tamper.append(msg)
        if op not in audit["torch_compute_ops"]:
            audit["torch_compute_ops"].append(op)


def _work_difference(first: tuple[int, list], again: tuple[int, list]) -> str | None:
    """How a forward call on repeated inputs did other work than the first call on them (its
    launch count and trace, `tools.compile.launch_record.launch_trace`); None when it did the same."""
    from tools.compile.launch_record import trace_difference

    diff = trace_difference(first[1], again[1])
    if diff is None and first[0] != again[0]:
        diff = f"{first[0]} kernel launches the first time, {again[0]} on the repeated inputs"
    return diff


def _note_refusal(result: dict[str, Any], budget: Any) -> None:
    """A launch the interpreter's budget refused: the verdict is `resource`, with its message."""
    if budget is not None and budget.refused:
        msg = budget.refused
        result.update(
            error={"kind": "TooSlowForInterpreter", "message": msg, "line": None, "code": None},
            error_class="resource",
        )


def _race_error(finding: dict[str, Any], kernels: list[str]) -> dict[str, Any]:
    return {
        "kind": "DataRace",
        "message": (
            f"data race in launch {finding['launch']} of forward ({', '.join(kernels)}): "
            f"program {finding['reader']} loaded {finding['addresses']} address(es) that program "
            f"{finding['writer']} stored in the same launch without an atomic. A GPU runs a "
            "launch's programs concurrently, so what it reads depends on scheduling (the "
            "interpreter runs them in order and hides it). Accumulate across programs with "
            "tl.atomic_add, or reduce in a second kernel"
        ),
        "line": None,
        "code": None,
    }


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _violations(tamper: list[str]) -> list[str]:
    """Guard refusals plus tampering, as plain strings (the list itself lives in the candidate's
    reach, so copy it defensively)."""
    out = []
    try:
        out = [str(v)[:300] for v in list(guard.VIOLATIONS)]
    except Exception:  # noqa: BLE001
        out = ["the sandbox's violation list was tampered with"]
    return out + tamper


def _line_in_kernel(source: str, line: int | None) -> bool:
    """Is `line` inside the body of a @triton.jit function? (Errors there are the compiler's or
    the interpreter's; errors at the call site are launch/runtime errors.)"""
    import ast

    if line is None:
        return True
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    from tools.core.problem import _is_triton_decorator

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            _is_triton_decorator(d) for d in node.decorator_list
        ):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return True
    return False
