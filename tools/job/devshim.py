"""Let CUDA-flavoured code run on the CPU under the Triton interpreter, and old Inductor-style
code run on any torch. Installed in job processes only (never in the agent's own process).

- `install_cpu_shim()`: `.cuda()` becomes a no-op, `device="cuda"` arguments become CPU,
  `torch.cuda.synchronize/set_device/_DeviceGuard` and Inductor's `empty_strided_cuda` /
  `get_raw_stream` helpers work without a GPU. Older KernelBench problems (`.cuda()` in
  `get_inputs`) and KernelLLM's Inductor-style output load on a CPU-only machine this way.
- `install_inductor_compat()`: names KernelLLM's outputs import that newer torch removed
  (`torch._inductor.runtime.triton_heuristics.grid`).
"""

from __future__ import annotations

import contextlib
import sys
import types

import torch
from torch.overrides import TorchFunctionMode

_installed = {"cpu": False, "compat": False}


def _cpuify(dev):
    if isinstance(dev, torch.device):
        return torch.device("cpu") if dev.type == "cuda" else dev
    if isinstance(dev, str) and dev.startswith("cuda"):
        return "cpu"
    return dev


class CudaToCpuMode(TorchFunctionMode):
    """Rewrites `device=cuda...` (and `.to("cuda")`) to the CPU for every torch function call."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _cpuify(kwargs["device"])
        if func in (torch.Tensor.to, torch.Tensor.cuda) or getattr(func, "__name__", "") == "to":
            args = tuple(_cpuify(a) for a in args)
        return func(*args, **kwargs)


class _NullGuard:
    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def install_cpu_shim() -> CudaToCpuMode:
    """Patch torch for CUDA-flavoured code on CPU; returns the mode to enter around user code."""
    if not _installed["cpu"]:
        _installed["cpu"] = True
        torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
        torch.nn.Module.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
        torch.cuda.synchronize = lambda *a, **k: None
        torch.cuda.set_device = lambda *a, **k: None
        torch.cuda.current_device = lambda: 0
        torch.cuda._DeviceGuard = _NullGuard  # type: ignore[attr-defined]
        torch.cuda.device = _NullGuard  # type: ignore[assignment]
        torch.cuda.empty_cache = lambda: None
        torch._C._cuda_getCurrentRawStream = lambda *a: 0  # type: ignore[attr-defined]
        guards = torch._C._dynamo.guards
        guards._empty_strided_cuda = lambda size, stride, dtype, *a, **k: torch.empty_strided(
            size, stride, dtype=dtype
        )
        install_inductor_compat()
    return CudaToCpuMode()


def _grid(*numels):
    """Inductor's old `grid(xnumel, ynumel, znumel)` helper (removed from torch in 2.6+)."""

    def cdiv(a, b):
        return (a + b - 1) // b

    def grid_fn(meta):
        dims = []
        for numel, block in zip(numels, ("XBLOCK", "YBLOCK", "ZBLOCK")):
            dims.append(cdiv(numel, meta.get(block, 1)) if numel is not None else 1)
        while len(dims) < 3:
            dims.append(1)
        return tuple(dims)

    return grid_fn


def install_inductor_compat() -> None:
    if _installed["compat"]:
        return
    _installed["compat"] = True
    name = "torch._inductor.runtime.triton_heuristics"
    try:
        mod = __import__(name, fromlist=["grid"])
    except Exception:
        mod = types.ModuleType(name)
        sys.modules[name] = mod
    if not hasattr(mod, "grid"):
        mod.grid = _grid  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        from torch._inductor.runtime import triton_helpers  # noqa: F401
