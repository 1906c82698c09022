"""Job functions. These run ONLY inside sandbox job processes (`tools.sandbox`), never in the
agent's process: they execute the problem's and the candidate's code.

Each returns plain data (dicts of tensors / dataclasses) for the agent process to judge; the
comparison itself happens in the agent process, out of the candidate's reach.
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import sys
import threading
import time
import traceback
import types
from contextlib import ExitStack, nullcontext
from dataclasses import asdict
from typing import Any

import torch

from tools import guard
from tools.compare import normalise_outputs

# ------------------------------------------------------------------------------------------
# Shared helpers


def job_device() -> str:
    return "cuda" if os.environ.get("TA_DEVICE") == "cuda" else "cpu"


def _device_context():
    """On CPU: the shim that turns `.cuda()` / device="cuda" into CPU. On CUDA: nothing."""
    if job_device() == "cpu":
        from tools.devshim import install_cpu_shim

        return install_cpu_shim()
    return nullcontext()


def exec_module(source: str, path: str, name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    code = compile(source, path, "exec")
    exec(code, mod.__dict__)
    return mod


def _to_device(x: Any, device: str) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, device) for v in x)
    return x


def _clone(xs: list) -> list:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _cpu_copy(xs: list) -> list:
    return [x.detach().to("cpu").clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _sync() -> None:
    if job_device() == "cuda":
        torch.cuda.synchronize()


def _warm_cuda() -> None:
    """Initialise CUDA and Triton's driver in the harness, before the integrity snapshot: what
    they import or set up lazily at the first launch is then not read as the candidate's doing.
    Best effort: a failure here shows up again, as the candidate's error, at its first launch."""
    try:
        torch.cuda.init()
        torch.cuda.current_stream()
        importlib.import_module("torch._subclasses.fake_tensor")
        from triton.runtime import driver

        driver.active.get_current_stream(driver.active.get_current_device())
    except Exception:  # noqa: BLE001
        pass


def _short_tb(exc: BaseException, limit: int = 6) -> str:
    """`ValueError: message (problem.py line 12, in get_inputs: raise ValueError(...))`: the error
    and where in the user's file it came from, without the harness's frames."""
    msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(os.path.dirname(os.path.abspath(__file__)))
        and "site-packages" not in f.filename
        and not f.filename.startswith("<frozen")
    ][-limit:]
    if not frames:
        return msg
    where = "; ".join(
        f"{os.path.basename(f.filename)} line {f.lineno}, in {f.name}"
        + (f": {f.line}" if f.line else "")
        for f in frames[-2:]
    )
    return f"{msg} ({where})"


# ------------------------------------------------------------------------------------------
# The reference job: load the problem, validate it, compute reference outputs.

# Interpreter limits (CPU): past these the run would take many minutes. See docs/verification.md.
CPU_MAX_ELEMENTS = 1 << 24  # elements read + written by one forward (64 MiB of fp32)
CPU_MAX_FLOPS = 2e9


def too_large_message(moved: int, flops: float) -> str:
    """Why a problem is refused on the CPU. Reductions, norms and softmax count 0 FLOPs in
    torch's FLOP counter: the message then says they were not counted, not "0 FLOPs"."""
    work = f"does {flops:.3g} FLOPs" if flops else "(its FLOPs are not counted for these ops)"
    return (
        f"too large for the Triton interpreter on the CPU: one forward moves {moved:,} elements "
        f"and {work} (limits: {CPU_MAX_ELEMENTS:,} elements, {CPU_MAX_FLOPS:.0e} FLOPs); it "
        "would run for hours. Shrink the size constants, run on a GPU, or pass --allow-large "
        "to try anyway."
    )


def estimate_work(mod: types.ModuleType) -> dict[str, Any]:
    """Sizes, bytes and FLOPs of one forward, computed on the meta device (nothing allocated)."""
    from torch.utils.flop_counter import FlopCounterMode

    est: dict[str, Any] = {"input_elements": None, "output_elements": None, "flops": None}
    try:
        with torch.device("meta"):
            inputs = list(mod.get_inputs())
            est["input_elements"] = sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))
            est["input_bytes"] = sum(
                t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)
            )
            model = mod.Model(*mod.get_init_inputs())
            with torch.no_grad(), FlopCounterMode(display=False) as fc:
                out = normalise_outputs(model(*inputs))
            est["output_elements"] = sum(t.numel() for t in out if isinstance(t, torch.Tensor))
            est["flops"] = int(fc.get_total_flops())
    except Exception as exc:  # meta tensors don't support every op; the estimate is best-effort
        est["error"] = f"{type(exc).__name__}: {exc}"
    return est


class ContractError(Exception):
    """The problem file breaks the KernelBench contract; the message says how."""


def load_problem(problem_source: str, problem_path: str) -> types.ModuleType:
    try:
        mod = exec_module(problem_source, problem_path, "problem")
    except Exception as exc:
        raise ContractError(f"the problem file raised while loading: {_short_tb(exc)}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            raise ContractError(f"the problem file defines no `{name}`")
    return mod


def build_model(mod: types.ModuleType, seed: int, device: str) -> tuple[torch.nn.Module, list]:
    try:
        init = list(mod.get_init_inputs())
    except Exception as exc:
        raise ContractError(f"get_init_inputs() raised: {_short_tb(exc)}") from None
    try:
        torch.manual_seed(seed)
        model = mod.Model(*init)
    except Exception as exc:
        raise ContractError(f"Model(*get_init_inputs()) raised: {_short_tb(exc)}") from None
    if not isinstance(model, torch.nn.Module):
        raise ContractError("Model is not a torch.nn.Module")
    return model.to(device), init


def make_inputs(mod: types.ModuleType, seed: int, device: str, scale: float = 1.0) -> list:
    """One trial's inputs from `get_inputs()` under `seed`, made on `device` where the problem
    lets them be (its factory calls run with `device` as the default device, so a 6.4 GB input
    is never built on the host and copied). The judge and the candidate's job each call this
    with the same seed and get the same values: inputs never cross a process boundary."""
    import random

    import numpy

    torch.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    try:
        with torch.device(device) if device == "cuda" else nullcontext():
            inputs = mod.get_inputs()
    except Exception as exc:
        raise ContractError(f"get_inputs() raised: {_short_tb(exc)}") from None
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ContractError(
            f"get_inputs() must return a non-empty list, got {type(inputs).__name__}"
        )
    bad = [i for i, x in enumerate(inputs) if not isinstance(x, (torch.Tensor, int, float, bool))]
    if bad:
        raise ContractError(
            f"get_inputs() item {bad[0]} is a {type(inputs[bad[0]]).__name__}, "
            "not a tensor (or a plain number)"
        )
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise ContractError("get_inputs() returned no tensors")
    inputs = _to_device(list(inputs), device)
    if scale != 1.0:
        with torch.no_grad():
            for x in inputs:
                if isinstance(x, torch.Tensor) and x.is_floating_point():
                    x.mul_(scale)
    return inputs


RACE_CHECK_MAX_BYTES = 64 << 20
"""The interpreter's race check (one run a verification) records the addresses every load and
store touches; past this size of a trial's inputs it is skipped (memory and time)."""

COLLECT_ABOVE_BYTES = 64 << 20
"""Collect reference cycles between runs only when a trial's inputs are this large: a full
collection costs about 0.25 s in a job with torch and Triton loaded (10 runs a verification),
and only large tensors held by cycles matter."""


def collect_if_large(inputs: Any) -> None:
    if tensor_bytes(inputs) >= COLLECT_ABOVE_BYTES:
        gc.collect()


def tensor_bytes(xs: Any) -> int:
    return sum(t.numel() * t.element_size() for t in xs if isinstance(t, torch.Tensor))


def peak_memory() -> dict[str, float]:
    """This process's peak host resident set and (on a GPU) peak device memory, in MiB."""
    import resource

    out = {"host_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if job_device() == "cuda" and torch.cuda.is_initialized():
        out["gpu_peak_mb"] = round(torch.cuda.max_memory_reserved() / 2**20, 1)
    return out


def problem_job(
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    trial_seed: int,
    check_size: bool = True,
) -> dict[str, Any]:
    """Check the problem once: it loads, meets the contract, runs, is deterministic; and measure
    its footprint (bytes of inputs, outputs and parameters, and this job's peaks), which sets
    the limits and the GPU admission of every verification of it.
    Returns {"error": message} for a problem that breaks the contract."""
    from tools.compare import allclose

    device = job_device()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with _device_context():
        try:
            mod = load_problem(problem_source, problem_path)
        except ContractError as exc:
            return {"error": str(exc)}
        est = estimate_work(mod)
        if device == "cpu" and check_size:
            moved = (est.get("input_elements") or 0) + (est.get("output_elements") or 0)
            flops = est.get("flops") or 0
            if moved > CPU_MAX_ELEMENTS or flops > CPU_MAX_FLOPS:
                return {
                    "error": too_large_message(moved, flops),
                    "too_large": True,
                    "estimate": est,
                }
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
        # Same inputs again (regenerated: the forward may have changed them), another RNG state.
        del inputs
        inputs = make_inputs(mod, trial_seed, device)
        torch.manual_seed(seed + 7)  # dropout would show
        with torch.no_grad():
            again = normalise_outputs(model(*inputs))
            _sync()
        del inputs
        same = len(out) == len(again) and all(
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and allclose(a, b, 1e-5, 1e-5)
            for a, b in zip(out, again)
        )
        if not same:
            return {
                "error": "the reference is non-deterministic: two forwards on the same "
                "inputs differ (dropout or other randomness in Model.forward?). Make it "
                "deterministic (e.g. p=0 or model.eval()) so outputs can be compared."
            }
        del out, again
        timings["reference"] = time.perf_counter() - t0 - timings["load"]
    return {
        "estimate": est,
        "footprint": footprint,
        "expected": expected,
        "memory": peak_memory(),
        "timings": timings,
        "torch_version": torch.__version__,
    }


# ------------------------------------------------------------------------------------------
# The candidate job


class _Stage(Exception):
    def __init__(self, stage: str, exc: BaseException, during_launch: bool = False):
        self.stage, self.exc, self.during_launch = stage, exc, during_launch


def _map_error(exc: BaseException, path: str) -> dict[str, Any]:
    try:
        from tools.aot import map_exception

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
    from tools.aot import _exception_chain

    for e in _exception_chain(exc):
        m = _CUDA_FAULT.search(str(e))
        if m:
            return m.group(1).strip()
    return None


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
    (`tools.handover`) and freeing them when the parent says so. Returns the evidence (audit,
    rule violations, errors); never sees a reference output and never judges.

    The seeds arrive only after the candidate is built, one trial at a time, so nothing it
    runs before a trial can know that trial's inputs, nor how many trials there will be."""
    from tools.audit import Integrity, ProfilerObserver, audited
    from tools.handover import export_outputs

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
        # What the candidate must leave alone (timers, torch entry points, this harness, the
        # guard's settings), and which threads exist before it runs.
        # Importing torch._dynamo replaces torch.manual_seed (and friends) with wrapped versions.
        # The CPU forkserver preloads it; on a GPU something imports it lazily during the first
        # forward, which the integrity check read as tampering (seen on the H200, torch 2.11).
        # Import it before the snapshot so only the candidate's own patches count.
        importlib.import_module("torch._dynamo")
        importlib.import_module("tools.handover")
        if device == "cuda" and "_inductor" in kernel_source:
            # KernelLLM-style output imports Inductor's runtime; on CPU the shim already did this.
            # Harness set-up, so before the snapshot: whatever importing Inductor replaces (on
            # some torch version) must not be read as the candidate's doing.
            from tools.devshim import install_inductor_compat

            install_inductor_compat()
        if device == "cuda":
            _warm_cuda()
        # harness set-up in this fresh process: problem, model, dynamo, CUDA and Triton's driver
        result["timings"]["setup"] = time.perf_counter() - t0

        # From here on the job refuses threads, native code and aten registrations (a
        # candidate's), and the snapshot below covers the guard's replacements.
        local_path = os.path.join(os.getcwd(), os.path.basename(kernel_path) or "candidate.py")
        guard.lock_down(local_path)
        races = None
        if device == "cpu":
            from tools import interp_checks

            races = interp_checks.install()  # TF32 dots; cross-program races (armed below)
        integrity = Integrity()
        threads_before = set(threading.enumerate())
        tamper: list[str] = []

        hooks_before = _hooks()

        def check_integrity(where: str, snap: Integrity) -> None:
            for label in snap.changed():
                msg = f"replacing {label} ({where})"
                if msg not in tamper:
                    tamper.append(msg)
            if where == "by the end of the job":  # the harness's own modes are gone by then
                return
            for hook in sorted(set(_hooks()) - set(hooks_before)):
                msg = f"leaving {hook} ({where}): code that runs outside forward"
                if msg not in tamper:
                    tamper.append(msg)

        # Write the candidate where its tracebacks point: the job's private directory.
        with open(local_path, "w") as f:
            f.write(kernel_source)
        try:
            cand = exec_module(kernel_source, local_path, "candidate")
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a candidate is an error too
            result.update(error=_map_error(exc, local_path), error_class="compile_error")
            check_integrity("while importing", integrity)
            result["violations"] = _violations(tamper)
            return result
        check_integrity("at import", integrity)
        result["timings"]["import"] = time.perf_counter() - t0 - result["timings"]["setup"]
        result["stage"] = "construct"
        model_new_cls = getattr(cand, "ModelNew", None)
        if model_new_cls is None:
            result.update(
                error={"kind": "bad_input", "message": "the candidate defines no `ModelNew`"},
                error_class="bad_input",
            )
            return result
        # The constructor runs under the same audit as forward: it runs before any trial's
        # seed exists, but work it does (a Triton launch on inputs it regenerated, PyTorch
        # compute beyond initialising parameters) is the candidate's, not free.
        try:
            torch.manual_seed(seed)
            with torch.no_grad(), audited(poison=False) as (ctor_mode, _ctor_launches):
                model_new = model_new_cls(*init)
            ctor_compute = [op for op in ctor_mode.compute if not _is_init_op(op)]
            ctor_library = list(ctor_mode.library)
            if isinstance(model_new, torch.nn.Module):
                model_new = model_new.to(device)
                _copy_matching_weights(model, model_new)
        except BaseException as exc:  # noqa: BLE001
            result.update(error=_map_error(exc, local_path), error_class="runtime_error")
            check_integrity("in the constructor", integrity)
            result["violations"] = _violations(tamper)
            return result
        check_integrity("in the constructor", integrity)
        del model  # the reference model has no business in this process from here on
        result["stage"] = "run"
        audit: dict[str, Any] = {
            "triton_launches": 0,
            "kernels": [],
            "torch_compute_ops": [],
            "library_ops": [],
            "mutated_inputs": [],
            "aliased_outputs": [],
        }
        # Compute in the constructor is judged like compute in forward.
        audit["torch_compute_ops"] += [f"{op} (in the constructor)" for op in ctor_compute]
        audit["library_ops"] += [f"{op} (in the constructor)" for op in ctor_library]
        if aot_target:
            try:
                from tools.aot import record_launches

                records = stack.enter_context(record_launches())
            except Exception as exc:
                result.setdefault("notes", []).append(f"launch recorder unavailable: {exc}")
        # Second snapshot: the launch recorder above legitimately patched triton's `run`.
        during = Integrity()
        observer = stack.enter_context(ProfilerObserver())
        idle_runs: list[str] = []
        prev_args: list | None = None
        t_run = time.perf_counter()
        channel.send({"ready": True, "timings": dict(result["timings"])})
        while True:
            msg = channel.recv()
            if not isinstance(msg, dict) or "trial" not in msg:
                break
            trial = int(msg["trial"])
            try:
                base = make_inputs(problem, int(msg["seed"]), device, float(msg.get("scale", 1.0)))
            except ContractError as exc:
                result.update(stage="problem", error={"kind": "ProblemError", "message": str(exc)})
                return result
            # The parent draws how many runs each trial gets (2 or more; unannounced), so a
            # kernel correct for exactly the documented number of calls is caught.
            runs = msg.get("runs") or ("first", "second")
            for run in runs:
                if run == "first":
                    # The previous run's buffers with this trial's values: a result cached by
                    # data pointer is now stale.
                    args = _refill(prev_args, base)
                else:
                    args = None
                prev_args = None
                if args is None:
                    collect_if_large(base)  # the previous run's arguments go first
                    args = _clone(base)
                _sync()  # inputs ready before the call: a kernel on a side stream must not race them
                # From here until the judge has compared this run's outputs, no code the
                # candidate left behind may run: automatic garbage collection is off (a
                # finalizer of its garbage could rewrite an output after the audit closed), and
                # forward's return value lives until then (freeing it could run a __del__).
                gc.disable()
                if races is not None:  # one forward a verification: the check costs a sort
                    races.armed = (
                        trial == 0 and run == "first" and tensor_bytes(base) <= RACE_CHECK_MAX_BYTES
                    )
                try:
                    with (
                        torch.no_grad(),
                        observer.forward(),
                        audited(poison=poison) as (mode, launches),
                    ):
                        out = model_new(*args)
                        _sync()
                except BaseException as exc:  # noqa: BLE001
                    gc.enable()
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
                    if out_of_memory(exc):
                        result["out_of_memory"] = _short_tb(exc, limit=1)[:500]
                    if fault:
                        result["cuda_fault"] = fault
                    check_integrity("in forward", during)
                    result["violations"] = _violations(tamper + observer.tampered)
                    audit["triton_launches"] += launches.count
                    result["audit"] = audit
                    result["memory"] = peak_memory()
                    return result
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
                        result["violations"] = _violations(tamper + observer.tampered)
                        audit["triton_launches"] += launches.count
                        result["audit"] = audit
                        return result
                if gc.isenabled():
                    msg = "switching the garbage collector back on (in forward)"
                    if msg not in tamper:
                        tamper.append(msg)
                if launches.count == 0:
                    idle_runs.append(f"trial {trial}, {run} run")
                flat = _checked_outputs(normalise_outputs(out), tamper)
                audit["triton_launches"] += launches.count
                for k in launches.names:
                    if k not in audit["kernels"]:
                        audit["kernels"].append(k)
                for op in mode.compute:
                    if op not in audit["torch_compute_ops"]:
                        audit["torch_compute_ops"].append(op)
                for op in mode.library:
                    if op not in audit["library_ops"]:
                        audit["library_ops"].append(op)
                # Mutation: the arguments against the pristine inputs, which the candidate never
                # received (no third full-size copy kept for the check). Helpers, not loops
                # here: a loop variable would keep a 1 GiB tensor alive into the next run.
                for i in _mutated(args, base):
                    if i not in audit["mutated_inputs"]:
                        audit["mutated_inputs"].append(i)
                for j in _aliased(args, flat):
                    if j not in audit["aliased_outputs"]:
                        audit["aliased_outputs"].append(j)
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
                del flat, out
                gc.enable()
                prev_args = args
                del args
                # The Triton interpreter leaves reference cycles that hold its launches'
                # arguments (seen on the CPU: RSS grew by two copies of a 1 GiB input per
                # trial until the cyclic collector ran); collect them with each run.
                collect_if_large(base)
                if isinstance(reply, dict) and reply.get("stop"):
                    break
            del base
            if isinstance(reply, dict) and reply.get("stop"):
                break
        result["timings"]["runs"] = time.perf_counter() - t_run
        observer.__exit__(None, None, None)
        if observer.exit_error:
            result.setdefault("notes", []).append(
                f"the op profiler failed to stop ({observer.exit_error}): only the dispatch-mode "
                "audit saw forward's ops"
            )
        hidden, hidden_lib = observer.ops()
        if hidden and not audit["torch_compute_ops"]:
            # The profiler saw compute the dispatch mode did not: the mode was popped/bypassed.
            audit["torch_compute_ops"] += [
                f"{op} (hidden from the dispatch audit)" for op in hidden
            ]
        if hidden_lib and not audit["library_ops"]:
            audit["library_ops"] += [f"{op} (hidden from the dispatch audit)" for op in hidden_lib]
        check_integrity("after forward", during)
        alive = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
        if alive:
            tamper.append(f"leaving {len(alive)} thread(s) running after forward ({alive[0].name})")
    check_integrity("by the end of the job", integrity)
    result["audit"] = audit
    result["idle_runs"] = idle_runs
    result["violations"] = _violations(tamper + observer.tampered)
    result["stage"] = "done"
    result["memory"] = peak_memory()
    if aot_target and records:
        t_aot = time.perf_counter()
        try:
            from tools.aot import aot_compile_all

            resources, errors = aot_compile_all(records, aot_target)
            result["resources"] = [asdict(r) for r in resources]
            result["aot_errors"] = [asdict(e) for e in errors]
        except Exception as exc:
            result.setdefault("notes", []).append(f"ahead-of-time compile unavailable: {exc}")
        result["timings"]["aot"] = time.perf_counter() - t_aot
    return result


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


def _hooks() -> list[str]:
    """Ways to run code after `forward` returns, while the harness reads and exports its outputs:
    profile and trace functions (per process and for new threads), sys.monitoring tools, and
    torch function/dispatch modes left on the stack. Checked after every forward; a hook that
    was not there before the candidate was imported is tampering (a profile hook can rewrite an
    output after the audit closed)."""
    found = []
    if sys.getprofile() is not None:
        found.append("a profile function (sys.setprofile)")
    if sys.gettrace() is not None:
        found.append("a trace function (sys.settrace)")
    for name, what in (
        ("getprofile", "a thread profile function"),
        ("gettrace", "a thread trace function"),
    ):
        get = getattr(threading, name, None)
        if get is not None and get() is not None:
            found.append(f"{what} (threading.set{name[3:]})")
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in range(6):
            try:
                if monitoring.get_tool(tool) is not None:
                    found.append(f"a sys.monitoring tool ({tool})")
            except Exception:  # noqa: BLE001
                pass
    try:
        from triton import knobs

        for name in (
            "launch_enter_hook",
            "launch_exit_hook",
            "kernel_load_start_hook",
            "kernel_load_end_hook",
            "jit_cache_hook",
            "jit_post_compile_hook",
            "add_stages_inspection_hook",
        ):
            hook = getattr(knobs.runtime, name, None)
            if hook is not None:
                # Triton's default is an empty HookChain: the object and its calls identify it.
                calls = [id(c) for c in getattr(hook, "calls", ())]
                found.append(
                    f"a Triton runtime hook (triton.knobs.runtime.{name}: {id(hook):x} {calls})"
                )
    except Exception:  # noqa: BLE001 - an older Triton without knobs
        pass
    # Counts, not presence: the CPU device shim keeps a function mode of the harness's own on
    # the stack, so a change of the count (a mode added, or the harness's popped) is the sign.
    try:
        found.append(f"{torch._C._len_torch_function_stack()} torch function mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    try:
        found.append(f"{torch._C._len_torch_dispatch_stack()} torch dispatch mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    return found


# What parameter initialisation runs (torch.nn.init and the layers' reset_parameters): random
# fills and the arithmetic that scales or truncates them. Anything else in a constructor is
# compute (the problem's own Model run on regenerated inputs, an answer table).
INIT_OPS = frozenset(
    {
        "uniform_",
        "normal_",
        "bernoulli_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "randn",
        "rand",
        "randint",
        "randperm",
        "normal",
        "erfinv_",
        "mul_",
        "add_",
        "sub_",
        "div_",
        "clamp_",
        "mul",
        "add",
        "sub",
        "div",
        "sqrt",
        "neg",
        "abs",
        "sign",
        "linalg_qr",
        "diag",
        "diagonal",
        "diag_embed",
        "eye",
        "erf",
        "erfinv",
        "clamp",
        "reciprocal",
        # range checks (trunc_normal_ validates its bounds)
        "lt",
        "gt",
        "le",
        "ge",
        "eq",
        "ne",
        "bitwise_or",
        "bitwise_and",
        "logical_or",
        "logical_and",
        "logical_not",
        "any",
        "all",
    }
)


def _is_init_op(label: str) -> bool:
    """Parameter initialisation, or constants and scalars a constructor reads or builds from
    Python values (a lookup table is not compute over inputs it cannot know yet)."""
    if label.startswith(("a tensor built from Python values", "tensor values read into Python")):
        return True
    return label.startswith("aten.") and label[len("aten.") :] in INIT_OPS


def _mutated(args: list, base: list) -> list[int]:
    return [
        i
        for i, (a, k) in enumerate(zip(args, base))
        if isinstance(a, torch.Tensor) and not _same(a, k)
    ]


def _aliased(args: list, outputs: list) -> list[int]:
    in_ptrs = {
        a.untyped_storage().data_ptr() for a in args if type(a) is torch.Tensor and a.numel()
    }
    return [
        j
        for j, o in enumerate(outputs)
        if isinstance(o, torch.Tensor)
        and o.layout == torch.strided
        and not o.is_nested
        and o.numel()
        and o.untyped_storage().data_ptr() in in_ptrs
    ]


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it chains) is an allocation failure."""
    from tools.aot import _exception_chain
    from tools.errors import is_out_of_memory_text

    return any(
        isinstance(e, (torch.OutOfMemoryError, MemoryError)) or is_out_of_memory_text(str(e))
        for e in _exception_chain(exc)
    )


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _refill(prev: list | None, new: list) -> list | None:
    """The previous run's input buffers holding the new trial's values (None when they do not
    fit). The first run of each later trial reuses the same memory with different values, so a
    cache keyed by data pointer always hits, and returns a stale result."""
    if prev is None or len(prev) != len(new):
        return None
    for a, b in zip(prev, new, strict=True):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return None
        if isinstance(a, torch.Tensor) and (
            type(a) is not torch.Tensor
            or a.shape != b.shape
            or a.dtype != b.dtype
            or a.stride() != b.stride()
            or a.device != b.device
        ):
            return None
    out = []
    for a, b in zip(prev, new, strict=True):
        if isinstance(a, torch.Tensor):
            with torch.no_grad():
                a.copy_(b)
            out.append(a)
        else:
            out.append(b)
    return out


def _violations(tamper: list[str]) -> list[str]:
    """Guard refusals plus tampering, as plain strings (the list itself lives in the candidate's
    reach, so copy it defensively)."""
    out = []
    try:
        out = [str(v)[:300] for v in list(guard.VIOLATIONS)]
    except Exception:  # noqa: BLE001
        out = ["the sandbox's violation list was tampered with"]
    return out + tamper


def _checked_outputs(flat: list, tamper: list[str]) -> list:
    """Only plain tensors (and numbers) cross to the parent. A tensor subclass can compute its
    values lazily when the harness reads it (outside the audit), so it is a cheat; any other
    object becomes a string naming its type, which the comparison reports."""
    out = []
    for j, o in enumerate(flat):
        if type(o) in (torch.Tensor, torch.nn.Parameter):
            out.append(o)
        elif isinstance(o, torch.Tensor):
            msg = f"returning a torch.Tensor subclass ({type(o).__name__}) as output {j}"
            if msg not in tamper:
                tamper.append(msg)
            out.append(f"<{type(o).__name__} tensor subclass>")
        elif o is None or type(o) in (int, float, bool, str):
            out.append(o)
        else:
            out.append(f"<{type(o).__name__} object>")
    return out


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
    from tools.problem import _is_triton_decorator

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            _is_triton_decorator(d) for d in node.decorator_list
        ):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return True
    return False


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values (NaN equal to NaN), without full-size temporaries when they are equal."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):
        return True
    if not a.is_floating_point():
        return False
    from tools.compare import allclose

    return allclose(a, b, 0.0, 0.0)


def _copy_matching_weights(src: torch.nn.Module, dst: torch.nn.Module) -> None:
    """Copy parameters/buffers whose names and shapes match (same-seed construction covers the
    rest)."""
    theirs = dst.state_dict()
    ours = {k: v for k, v in src.state_dict().items() if k in theirs and theirs[k].shape == v.shape}
    if ours:
        dst.load_state_dict(ours, strict=False)
