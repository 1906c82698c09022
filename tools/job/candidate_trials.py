"""The candidate's trials, in the candidate's job: trial by trial as the parent asks, the calls of
forward on the trial's inputs (its checked runs; unchecked calls before the first unannounced
trial's run; a control call after a timed trial), each under the audit, the profiler observer and
the compute block, accounted, its outputs exported for the judge (`tools.job.handover`) and freed
under the audit. Runs only inside the candidate's job process.
"""

from __future__ import annotations

import gc
import os
import secrets
from typing import Any

import torch

from tools.checks.compare import normalise_outputs
from tools.job.candidate_evidence import account_run, check_integrity, forward_failed, note_refused
from tools.job.forward_checks import checked_outputs, refill
from tools.job.job_common import ContractError, _clone, _sync, collect_if_large, make_inputs
from tools.orchestrate.verify_options import unchecked_calls


def run_trials(job: tuple, kit: tuple, checks: tuple, found: tuple) -> bool:
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
        calls = _calls(msg, runs, unchecked_due)
        unchecked_due = unchecked_due and len(runs) != 1
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


def _calls(msg: dict, runs: list[str], unchecked_due: bool) -> list[tuple[str, bool]]:
    """A trial's calls of forward, as (run, checked): its runs, checked. The first unannounced
    trial (one run; `unchecked_due`) comes after unchecked calls (fresh inputs, every check but
    the comparison), however many the parent drew (`unchecked_calls` where it sent none): the
    calls a kernel must stay right for cannot be counted (tools.orchestrate.verify_options)."""
    calls = [(run, True) for run in runs]
    if len(runs) == 1 and unchecked_due:
        n = msg.get("unchecked")
        n = n if isinstance(n, int) and 0 <= n <= 1000 else unchecked_calls()
        calls = [("unchecked", False)] * n + calls
    return calls


def _control_due(result: dict[str, Any], trial: int, run: str, numbers: bool, exempt: bool) -> bool:
    """Whether a control call follows this run: after a trial's second run where its calls
    were timed (a GPU's launch times, `tools.checks.launch_times`): fresh values, as a repeat
    (launch_times.FRESH)."""
    times = result.get("launch_times") or [{}]
    return run == "second" and numbers and not exempt and times[-1].get("trial") == trial


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
        if _control_due(found[0], trial, run, numbers, exempt):
            calls.append(("control", False))
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
            note_refused(refused, audit, tamper, refused_library, is_library)
            if blocked is blocked_all and any(map(is_library, refused)):
                # The first library call, refused and recorded: the same call once more with
                # the library allowed, for the lenient policy's verdict.
                blocked = blocked_but_library
                _before_library_retry(mode, audit, checks, first_record, aot_target)
                del exc
                collect_if_large(pristine)
                args = _clone(pristine)
                continue
            forward_failed(exc, launches, job, checks, found, trial)
            return "end", blocked, None
        break
    seen = (mode, launches, refused, first_record)
    ended, work = account_run(
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
    check_integrity("after forward's outputs were freed", during, everything=True)


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
    check_integrity("in forward", during)
    if races is not None:
        races.check()
    if not aot_target:
        del records[first_record:]


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


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
