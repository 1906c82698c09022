"""The evidence of the candidate's forward calls, in the candidate's job: each call's launches,
kernels, operators, refused library calls, mutated and aliased inputs and repeated work into the
audit; the integrity checks; an error mapped to the candidate's line (a compile error, a runtime
error, a CUDA fault, a data race, a launch the interpreter's budget refused). Runs only inside the
candidate's job process.
"""

from __future__ import annotations

import gc
import re
import traceback
from dataclasses import asdict
from typing import Any

from tools.job import guard
from tools.job.forward_checks import aliased, mutated
from tools.job.job_common import _short_tb, out_of_memory, peak_memory


def check_integrity(where: str, watch: tuple, everything: bool = False) -> None:
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


def all_violations(tamper: list[str]) -> list[str]:
    """Guard refusals plus tampering, as plain strings (the list itself lives in the candidate's
    reach, so copy it defensively)."""
    out = []
    try:
        out = [str(v)[:300] for v in list(guard.VIOLATIONS)]
    except Exception:  # noqa: BLE001
        out = ["the sandbox's violation list was tampered with"]
    return out + tamper


def map_error(exc: BaseException, path: str) -> dict[str, Any]:
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


def forward_failed(
    exc: BaseException, launches: Any, job: tuple, checks: tuple, found: tuple, trial: int
) -> None:
    """Forward raised: the error (mapped to the candidate's line; a compile error when a
    launch failed in a kernel's body, a crash for a CUDA fault), the evidence so far."""
    kernel_source, local_path = job[6], job[7]
    during, _races, budget, observer, _records = checks
    result = found[0]
    failed_launch = launches.failed
    err = map_error(exc, local_path)
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
    note_refusal(result, budget)
    if out_of_memory(exc):
        result["out_of_memory"] = _short_tb(exc, limit=1)[:500]
    if fault:
        result["cuda_fault"] = fault
    check_integrity("in forward", during)
    _end_with(found, observer, launches)
    result["memory"] = peak_memory()


def _end_with(found: tuple, observer: Any, launches: Any) -> None:
    """The evidence of a job that ends in forward (an error, a race): the violations, the audit
    with this call's launches, the refused library calls."""
    result, audit, tamper, refused_library = found[:4]
    result["violations"] = all_violations(tamper + observer.tampered)
    audit["triton_launches"] += launches.count
    result["audit"] = audit
    result["refused_library"] = refused_library


def account_run(
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
    check_integrity("in forward", during)
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
    note_refused(refused, audit, tamper, refused_library, is_library)
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
        diff = work_difference(first_work, work)
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


def note_refused(
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


def note_refusal(result: dict[str, Any], budget: Any) -> None:
    """A launch the interpreter's budget refused: the verdict is `resource`, with its message."""
    if budget is not None and budget.refused:
        msg = budget.refused
        result.update(
            error={"kind": "TooSlowForInterpreter", "message": msg, "line": None, "code": None},
            error_class="resource",
        )


def work_difference(first: tuple[int, list], again: tuple[int, list]) -> str | None:
    """How a forward call on repeated inputs did other work than the first call on them (its
    launch count and trace, `tools.compile.launch_record.launch_trace`); None when it did the same."""
    from tools.compile.launch_record import trace_difference

    diff = trace_difference(first[1], again[1])
    if diff is None and first[0] != again[0]:
        diff = f"{first[0]} kernel launches the first time, {again[0]} on the repeated inputs"
    return diff


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
