"""Before the candidate's first trial, in the candidate's job: the harness armed (its set-up, the
operator lists of the compute block, the candidate's isolation and the guard's lock-down, the
interpreter's checks, the integrity snapshots), then the candidate imported and its `ModelNew` built
under the constructor rule. Runs only inside the candidate's job process.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from dataclasses import asdict
from typing import Any

import torch

from tools.job import guard
from tools.job.candidate_evidence import all_violations, check_integrity, map_error, note_refusal
from tools.job.job_common import _copy_matching_weights, _warm_cuda, exec_module, reference_tensors
from tools.job.size_guard import install_launch_budget


def arm_harness(
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
    from tools.checks.integrity import Integrity
    from tools.checks.process_snapshot import ProcessSnapshot
    from tools.checks.run_hooks import hooks

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


def new_audit(ctor_compute: list[str]) -> dict[str, Any]:
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
    for name in (
        "tools.compile.error_map",
        "tools.core.problem",
        "tools.compile.launch_record",
        "tools.compile.aot",
        "ast",
    ):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional piece; its own use reports it
            pass


def import_candidate(
    kernel_source: str, local_path: str, result: dict[str, Any], start: tuple
) -> Any:
    """Write the candidate where its tracebacks point (the job's private directory) and import
    it; the integrity check follows. None when the import raised (`result` says how)."""
    with open(local_path, "w") as f:
        f.write(kernel_source)
    try:
        cand = exec_module(kernel_source, local_path, "candidate")
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a candidate is an error too
        result.update(error=map_error(exc, local_path), error_class="compile_error")
        check_integrity("while importing", start, everything=True)
        result["violations"] = all_violations(start[2])
        return None
    check_integrity("at import", start, everything=True)
    return cand


def construct_candidate(
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
    rule (tools.checks.constructor_audit.ConstructorAuditMode): setup computed from constants (a causal mask, a
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
        result.update(error=map_error(exc, local_path), error_class="runtime_error")
        note_refusal(result, budget)
        check_integrity("in the constructor", start)
        result["violations"] = all_violations(start[2])
        return None
    check_integrity("in the constructor", start, everything=True)
    return model_new, ctor_compute
