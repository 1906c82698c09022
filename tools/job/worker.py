"""The candidate's job: import the candidate, build it like the reference, run it trial by trial as
the parent asks under the audit, and return the evidence. Runs ONLY inside a sandbox job process
(`tools.sandboxing.sandbox`), never in the agent's process: it executes the candidate's code.

It returns plain data (the audit, rule violations, errors) for the agent process to judge; the
comparison itself happens in the judge's job, out of the candidate's reach. Its steps live beside
it: the harness armed and the candidate loaded (`tools.job.candidate_arming`), its trials
(`tools.job.candidate_trials`), the evidence of each forward call (`tools.job.candidate_evidence`).
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import asdict
from typing import Any

from tools.job.candidate_arming import arm_harness, construct_candidate, import_candidate, new_audit
from tools.job.candidate_evidence import all_violations, check_integrity
from tools.job.candidate_trials import run_trials
from tools.job.job_common import (
    ContractError,
    _device_context,
    build_model,
    job_device,
    load_problem,
    peak_memory,
)

# The candidate job's steps share its state as plain tuples (immutable), built in
# `candidate_job` and `arm_harness` before the candidate's first line: no module global and no
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
    when): the harness armed (`arm_harness`), the import (`import_candidate`), the constructor
    (`construct_candidate`), the trials (`run_trials`, each forward's evidence accounted in
    `tools.job.candidate_evidence`), the checks after the last forward (`_close_runs`), the
    evidence (`_finish`)."""
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
        armed = arm_harness(
            device, kernel_source, kernel_path, problem, result, t0, (audited, export_outputs)
        )
        kit, races, budget, local_path, start, threads_before, record_launches = armed
        cand = import_candidate(kernel_source, local_path, result, start)
        if cand is None:
            return result
        result["timings"]["import"] = time.perf_counter() - t0 - result["timings"]["setup"]
        result["stage"] = "construct"
        built = construct_candidate(
            cand, model, init, seed, device, constructor_audited, result, budget, local_path, start
        )
        if built is None:
            return result
        model_new, ctor_compute = built
        del model, built  # the reference model has no business in this process from here on
        result["stage"] = "run"
        found = (result, new_audit(ctor_compute), start[2], [], [], [])
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
        if not run_trials(job, kit, checks, found):
            return result
        result["timings"]["runs"] = time.perf_counter() - t_run
        _close_runs(observer, found, during, threads_before)
    check_integrity("by the end of the job", start, everything=True)
    _finish(found, budget, observer, records, aot_target)
    return result


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
    check_integrity("after forward", during)
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
    result["violations"] = all_violations(tamper + observer.tampered)
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
