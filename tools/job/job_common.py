"""What every job process does with the problem: pick the device, load and build the problem's
model, make a trial's inputs from its seed, measure memory. Used by the candidate's and the
problem's jobs (`tools.job.worker`), the judge (`tools.job.judge`), the timing job and the sanitizer;
these functions run ONLY inside sandbox job processes.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import traceback
import types
from contextlib import nullcontext
from typing import Any

import torch

from tools.checks.compare import normalise_outputs
from tools.core.problem_dtype import (
    cast_floating,
    cast_model,
    job_precision,
    precision_of,
    set_precision,
    torch_dtype,
)

__all__ = ["normalise_outputs"]  # the judge reads it from here with the rest


def job_device() -> str:
    return "cuda" if os.environ.get("TA_DEVICE") == "cuda" else "cpu"


def _device_context():
    """On CPU: the shim that turns `.cuda()` / device="cuda" into CPU. On CUDA: nothing."""
    if job_device() == "cpu":
        from tools.job.devshim import install_cpu_shim

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
        if not f.filename.startswith(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


class ContractError(Exception):
    """The problem file breaks the KernelBench contract; the message says how."""


def load_problem(
    problem_source: str, problem_path: str, precision: str | None = None
) -> types.ModuleType:
    """The problem's module, marked with the `precision` its model and inputs are cast to
    (default: the job's, `tools.core.problem_dtype.job_precision`; `build_model` and `make_inputs`
    read it)."""
    try:
        mod = exec_module(problem_source, problem_path, "problem")
    except Exception as exc:
        raise ContractError(f"the problem file raised while loading: {_short_tb(exc)}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            raise ContractError(f"the problem file defines no `{name}`")
    return set_precision(mod, precision or job_precision())


def build_model(mod: types.ModuleType, seed: int, device: str) -> tuple[torch.nn.Module, list]:
    """`Model(*get_init_inputs())` under `seed` on `device`, at the problem's precision (its
    floating parameters, buffers and constructor tensors cast: `tools.core.problem_dtype`)."""
    dtype = torch_dtype(precision_of(mod))
    try:
        init = cast_floating(list(mod.get_init_inputs()), dtype)
    except Exception as exc:
        raise ContractError(f"get_init_inputs() raised: {_short_tb(exc)}") from None
    try:
        torch.manual_seed(seed)
        model = mod.Model(*init)
    except Exception as exc:
        raise ContractError(f"Model(*get_init_inputs()) raised: {_short_tb(exc)}") from None
    if not isinstance(model, torch.nn.Module):
        raise ContractError("Model is not a torch.nn.Module")
    return cast_model(model.to(device), dtype), init


def make_inputs(mod: types.ModuleType, seed: int, device: str, scale: float = 1.0) -> list:
    """One trial's inputs from `get_inputs()` under `seed`, made on `device` where the problem
    lets them be (its factory calls run with `device` as the default device, so a 6.4 GB input
    is never built on the host and copied). The judge and the candidate's job each call this
    with the same seed and get the same values: inputs never cross a process boundary. Floating
    inputs are cast to the problem's precision (`tools.core.problem_dtype`), then scaled."""
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
    inputs = cast_floating(_to_device(list(inputs), device), torch_dtype(precision_of(mod)))
    if scale != 1.0:
        with torch.no_grad():
            for x in inputs:
                if isinstance(x, torch.Tensor) and x.is_floating_point():
                    x.mul_(scale)
    return inputs


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


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it chains) is an allocation failure."""
    from tools.compile.error_map import exception_chain
    from tools.core.errors import is_out_of_memory_text

    return any(
        isinstance(e, (torch.OutOfMemoryError, MemoryError)) or is_out_of_memory_text(str(e))
        for e in exception_chain(exc)
    )


def reference_tensors(model: torch.nn.Module) -> list[torch.Tensor]:
    """The reference's floating parameters and buffers (each a lineage of its own while they
    are copied into the candidate: tools.checks.constructor_audit.ConstructorAuditMode)."""
    out = [p for p in model.parameters()] + [b for b in model.buffers()]
    return [t.detach() for t in out if t.is_floating_point()]


def _copy_matching_weights(src: torch.nn.Module, dst: torch.nn.Module) -> None:
    """Make the candidate's model `dst` like the reference `src`: at the job's precision (its
    floating parameters and buffers cast, KernelBench's `custom_model.to(dtype=precision)`;
    nothing at fp32), then parameters/buffers whose names and shapes match copied (same-seed
    construction covers the rest). Every job that builds a candidate's model calls this."""
    cast_model(dst, torch_dtype(job_precision()))
    theirs = dst.state_dict()
    ours = {k: v for k, v in src.state_dict().items() if k in theirs and theirs[k].shape == v.shape}
    if ours:
        dst.load_state_dict(ours, strict=False)
