"""Job functions. These run ONLY inside sandbox job processes (`tools.sandbox`), never in the
agent's process: they execute the problem's and the candidate's code.

Each returns plain data (dicts of tensors / dataclasses) for the agent process to judge; the
comparison itself happens in the agent process, out of the candidate's reach.
"""

from __future__ import annotations

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


def reference_job(
    problem_source: str,
    problem_path: str,
    *,
    trials: int,
    seed: int,
    check_size: bool = True,
    extra_input_seeds: int = 0,
    input_scales: tuple[float, ...] | list[float] = (),
) -> dict[str, Any]:
    """Load the problem, check the contract, return inputs and reference outputs per trial.

    `input_scales`: one extra trial per factor, with the floating-point inputs multiplied by it
    (the generalisation check against kernels that are right only for randn's range).
    Returns {"error": message} for a problem that breaks the contract.
    """
    device = "cuda" if job_device() == "cuda" else "cpu"
    ctx = _device_context()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with ctx:
        try:
            mod = exec_module(problem_source, problem_path, "problem")
        except Exception as exc:
            return {"error": f"the problem file raised while loading: {_short_tb(exc)}"}
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(mod, name):
                return {"error": f"the problem file defines no `{name}`"}
        est = estimate_work(mod) if device == "cpu" else {}
        if device == "cpu" and check_size:
            moved = (est.get("input_elements") or 0) + (est.get("output_elements") or 0)
            flops = est.get("flops") or 0
            if moved > CPU_MAX_ELEMENTS or flops > CPU_MAX_FLOPS:
                return {
                    "error": (
                        f"too large for the Triton interpreter on the CPU: one forward moves "
                        f"{moved:,} elements and does {flops:.3g} FLOPs (limits: "
                        f"{CPU_MAX_ELEMENTS:,} elements, {CPU_MAX_FLOPS:.0e} FLOPs); it would run "
                        "for hours. Shrink the size constants, run on a GPU, or pass "
                        "--allow-large to try anyway."
                    ),
                    "too_large": True,
                    "estimate": est,
                }
        try:
            init = list(mod.get_init_inputs())
        except Exception as exc:
            return {"error": f"get_init_inputs() raised: {_short_tb(exc)}"}
        try:
            torch.manual_seed(seed)
            model = mod.Model(*init)
        except Exception as exc:
            return {"error": f"Model(*get_init_inputs()) raised: {_short_tb(exc)}"}
        if not isinstance(model, torch.nn.Module):
            return {"error": "Model is not a torch.nn.Module"}
        model = model.to(device)
        timings["load"] = time.perf_counter() - t0
        all_inputs, all_outputs = [], []
        scales = [1.0] * (trials + extra_input_seeds) + [float(x) for x in input_scales]
        for trial, scale in enumerate(scales):
            torch.manual_seed(seed + 1000 * (trial + 1))
            try:
                inputs = mod.get_inputs()
            except Exception as exc:
                return {"error": f"get_inputs() raised: {_short_tb(exc)}"}
            if scale != 1.0 and isinstance(inputs, (list, tuple)):
                inputs = [
                    x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                    for x in inputs
                ]
            if not isinstance(inputs, (list, tuple)) or not inputs:
                return {
                    "error": f"get_inputs() must return a non-empty list, got {type(inputs).__name__}"
                }
            bad = [
                i
                for i, x in enumerate(inputs)
                if not isinstance(x, (torch.Tensor, int, float, bool))
            ]
            if bad:
                return {
                    "error": f"get_inputs() item {bad[0]} is a {type(inputs[bad[0]]).__name__}, "
                    "not a tensor (or a plain number)"
                }
            if not any(isinstance(x, torch.Tensor) for x in inputs):
                return {"error": "get_inputs() returned no tensors"}
            inputs = _to_device(list(inputs), device)
            try:
                with torch.no_grad():
                    out = normalise_outputs(model(*_clone(inputs)))
                    _sync()
                    torch.manual_seed(seed + 7)  # a different RNG state: dropout would show
                    again = normalise_outputs(model(*_clone(inputs)))
                    _sync()
            except Exception as exc:
                return {"error": f"Model.forward raised on get_inputs(): {_short_tb(exc)}"}
            nonten = [i for i, o in enumerate(out) if not isinstance(o, torch.Tensor)]
            if nonten:
                return {"error": f"Model.forward output {nonten[0]} is not a tensor"}
            for a, b in zip(out, again):
                same = a.shape == b.shape and bool(
                    torch.isclose(
                        a.double(), b.double(), atol=1e-5, rtol=1e-5, equal_nan=True
                    ).all()
                )
                if not same:
                    return {
                        "error": "the reference is non-deterministic: two forwards on the same "
                        "inputs differ (dropout or other randomness in Model.forward?). Make it "
                        "deterministic (e.g. p=0 or model.eval()) so outputs can be compared."
                    }
            all_inputs.append(_cpu_copy(inputs))
            all_outputs.append(_cpu_copy(out))
        timings["reference"] = time.perf_counter() - t0 - timings["load"]
    return {
        "inputs": all_inputs,
        "outputs": all_outputs,
        "estimate": est,
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
    kernel_source: str,
    kernel_path: str,
    problem_source: str,
    problem_path: str,
    inputs_per_trial: list[list[Any]],
    *,
    seed: int,
    poison: bool = True,
    aot_target: str | None = None,
) -> dict[str, Any]:
    """Import the candidate, build it like the reference, run it before and after the reference
    on cloned inputs under the audit. Returns outputs and evidence; never judges them."""
    from tools.audit import Integrity, ProfilerObserver, audited

    device = "cuda" if job_device() == "cuda" else "cpu"
    result: dict[str, Any] = {"stage": "import", "timings": {}}
    t0 = time.perf_counter()
    records: list = []
    with ExitStack() as stack:
        stack.enter_context(_device_context())
        try:
            problem = exec_module(problem_source, problem_path, "problem")
            init = list(problem.get_init_inputs())
            torch.manual_seed(seed)
            model = problem.Model(*init).to(device)
        except Exception as exc:  # the reference job already validated this
            result.update(stage="problem", error=_map_error(exc, problem_path))
            return result
        # What the candidate must leave alone (timers, torch entry points, this harness, the
        # guard's settings), and which threads exist before it runs.
        # Importing torch._dynamo replaces torch.manual_seed (and friends) with wrapped versions.
        # The CPU forkserver preloads it; on a GPU something imports it lazily during the first
        # forward, which the integrity check read as tampering (seen on the H200, torch 2.11).
        # Import it before the snapshot so only the candidate's own patches count.
        importlib.import_module("torch._dynamo")
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

        integrity = Integrity()
        threads_before = set(threading.enumerate())
        tamper: list[str] = []

        def check_integrity(where: str, snap: Integrity) -> None:
            for label in snap.changed():
                msg = f"replacing {label} ({where})"
                if msg not in tamper:
                    tamper.append(msg)

        # Write the candidate where its tracebacks point: the job's private directory.
        local_path = os.path.join(os.getcwd(), os.path.basename(kernel_path) or "candidate.py")
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
        try:
            torch.manual_seed(seed)
            model_new = model_new_cls(*init)
            if isinstance(model_new, torch.nn.Module):
                model_new = model_new.to(device)
                _copy_matching_weights(model, model_new)
        except BaseException as exc:  # noqa: BLE001
            result.update(error=_map_error(exc, local_path), error_class="runtime_error")
            check_integrity("in the constructor", integrity)
            result["violations"] = _violations(tamper)
            return result
        check_integrity("in the constructor", integrity)
        result["stage"] = "run"
        outputs: list[list[list]] = []
        audit: dict[str, Any] = {
            "triton_launches": 0,
            "kernels": [],
            "torch_compute_ops": [],
            "library_ops": [],
            "mutated_inputs": [],
            "aliased_outputs": [],
        }
        recorder = None
        if aot_target:
            try:
                from tools.aot import record_launches

                recorder = record_launches()
                records = stack.enter_context(recorder)
            except Exception as exc:
                result.setdefault("notes", []).append(f"launch recorder unavailable: {exc}")
        # Second snapshot: the launch recorder above legitimately patched triton's `run`.
        during = Integrity()
        observer = stack.enter_context(ProfilerObserver())
        idle_runs: list[str] = []
        prev_args: list | None = None
        t_run = time.perf_counter()
        for trial, inputs in enumerate(inputs_per_trial):
            base = _to_device(inputs, device)
            pair = []
            for run in ("first", "second"):
                if run == "second":
                    # The reference runs in between, in this process, so that memory it frees is
                    # what the candidate's second run may be handed (stale-result detection).
                    with torch.no_grad():
                        ref_local = model(*_clone(base))
                    _sync()
                    del ref_local
                args = _refill(prev_args, base) if run == "first" else None
                if args is None:
                    args = _clone(base)
                prev_args = args
                keep = _clone(base)
                _sync()  # inputs ready before the call: a kernel on a side stream must not race them
                try:
                    with (
                        torch.no_grad(),
                        observer.forward(),
                        audited(poison=poison) as (mode, launches),
                    ):
                        out = model_new(*args)
                        _sync()
                except BaseException as exc:  # noqa: BLE001
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
                    if fault:
                        result["cuda_fault"] = fault
                    check_integrity("in forward", during)
                    result["violations"] = _violations(tamper + observer.tampered)
                    audit["triton_launches"] += launches.count
                    result["audit"] = audit
                    return result
                check_integrity("in forward", during)
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
                for i, (a, k) in enumerate(zip(args, keep)):
                    if (
                        isinstance(a, torch.Tensor)
                        and not _same(a, k)
                        and i not in audit["mutated_inputs"]
                    ):
                        audit["mutated_inputs"].append(i)
                in_ptrs = {
                    a.untyped_storage().data_ptr()
                    for a in args
                    if type(a) is torch.Tensor and a.numel()
                }
                for j, o in enumerate(flat):
                    if (
                        isinstance(o, torch.Tensor)
                        and o.numel()
                        and o.untyped_storage().data_ptr() in in_ptrs
                        and j not in audit["aliased_outputs"]
                    ):
                        audit["aliased_outputs"].append(j)
                pair.append(_cpu_copy(flat))
            outputs.append(pair)
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
    result["outputs"] = outputs
    result["audit"] = audit
    result["idle_runs"] = idle_runs
    result["violations"] = _violations(tamper + observer.tampered)
    result["stage"] = "done"
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
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool((a == b).all())


def _copy_matching_weights(src: torch.nn.Module, dst: torch.nn.Module) -> None:
    """Copy parameters/buffers whose names and shapes match (same-seed construction covers the
    rest)."""
    theirs = dst.state_dict()
    ours = {k: v for k, v in src.state_dict().items() if k in theirs and theirs[k].shape == v.shape}
    if ours:
        dst.load_state_dict(ours, strict=False)
