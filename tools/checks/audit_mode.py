"""What runs inside `ModelNew.forward`: the dispatch mode and the launch counter (job-process
side; `tools.checks.audit.audited` puts them in place).

- Triton launches are counted by wrapping `JITFunction.run` (GPU) and `InterpretedFunction.run`
  (CPU interpreter). While a kernel runs, all torch modes are suspended, so the interpreter's own
  tensor handling is not mistaken for PyTorch compute.
- A `TorchDispatchMode` records every aten op. Allocations and views are free; library
  matmul/conv ops are "library" (allowed only under the `allow-library` policy); anything else is
  PyTorch compute, which the strict policy rejects (the sets: `tools.checks.audit_ops`).
- Fresh allocations (`empty*`) are filled with a poison value (NaN for floats, a large sentinel for
  integers), so an output that was never written, or that merely reuses memory which happened to
  hold the reference's result, cannot pass.
"""

from __future__ import annotations

import math
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from tools.checks.audit_ops import (
    ALLOC_OPS,
    ATEN_NAMESPACES,
    HOST_DATA_LIMIT,
    LIBRARY_OPS,
    POISON_OPS,
    RNG_OPS,
    SCALAR_READ_LIMIT,
    VIEW_OPS,
    op_name,
)

INT_POISON = 0x5A5A5A5  # an unlikely value that still fits int32


class AuditMode(TorchDispatchMode):
    def __init__(self, poison: bool = True, launches: LaunchCounter | None = None) -> None:
        super().__init__()
        self.poison = poison
        self.launches = launches
        self.compute: Counter[str] = Counter()
        self.library: Counter[str] = Counter()
        self.scalar_reads = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        namespace = getattr(func, "namespace", "aten")
        before = self.launches.count if self.launches is not None else 0
        out = func(*args, **kwargs)
        if namespace not in ATEN_NAMESPACES:
            launched = self.launches is not None and self.launches.count > before
            if not launched:
                self.compute[f"{namespace}.{name} (custom operator, no Triton launch inside)"] += 1
        elif name in LIBRARY_OPS:
            self.library[f"aten.{name}"] += 1
        elif (
            name == "_to_copy"
            and "dtype" in kwargs
            and args
            and kwargs["dtype"] != getattr(args[0], "dtype", None)
        ):
            self.compute["aten._to_copy (dtype conversion)"] += 1
        elif name in ("_local_scalar_dense", "item"):
            self.scalar_reads += 1
            if self.scalar_reads > SCALAR_READ_LIMIT:
                self.compute["tensor values read into Python (.item()/float()/int())"] += 1
        elif name in ("lift_fresh", "lift_fresh_copy"):
            if isinstance(out, torch.Tensor) and out.numel() > HOST_DATA_LIMIT:
                self.compute["a tensor built from Python values (torch.tensor(data))"] += 1
        elif name in RNG_OPS and not reads_tensor_values(name, args, kwargs):
            pass
        elif name in ALLOC_OPS or name in VIEW_OPS:
            if self.poison and name in POISON_OPS and isinstance(out, torch.Tensor):
                _fill_poison(out)
        else:
            self.compute[f"aten.{name}"] += 1
        return out


def reads_tensor_values(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether a random op reads tensor values: any tensor argument other than the tensor it
    fills (`normal_(self)`) or its `out=` (e.g. `normal(mean_tensor, std)` reads `mean`)."""
    rest = args[1:] if name.endswith("_") else args
    tensors = [a for a in rest if isinstance(a, torch.Tensor)]
    tensors += [v for k, v in kwargs.items() if k != "out" and isinstance(v, torch.Tensor)]
    return bool(tensors)


def _fill_poison(t: torch.Tensor) -> None:
    if t.numel() == 0:
        return
    with torch.no_grad():
        if t.is_floating_point() or t.is_complex():
            t.fill_(math.nan)
        elif t.dtype == torch.bool:
            t.fill_(True)
        else:
            t.fill_(INT_POISON if t.element_size() >= 4 else 0x5A)
    if t.is_cuda:
        # The fill is queued on the current stream; a kernel the candidate launches on another
        # stream must not race it (the poison would overwrite a correct result).
        torch.cuda.current_stream(t.device).synchronize()


class LaunchCounter:
    """Counts Triton launches and suspends torch modes while a kernel runs.

    Launches are counted where programs actually run, whatever the path that got there:
    `JITFunction.run`, and below it the GPU driver's launcher (so a `CompiledKernel` launched
    directly, from `warmup()` or `triton.compile`, counts too); on the CPU the interpreter's
    `GridExecutor` (so one built directly counts, but only for a function Triton rewrote from a
    `@triton.jit` kernel: any other Python function run "as a kernel" is compute). Code the
    candidate hands a launch (a grid callable, pre-run hooks) runs with the audit resumed, as
    forward does: only Triton's own work inside a launch is out of the audit's sight."""

    def __init__(self) -> None:
        self.count = 0
        self.failed = False
        """True when an exception escaped a kernel launch (compile or interpreter error)."""
        self.names: list[str] = []
        self.depth = 0
        """> 0 while a kernel runs (the interpreter's own tensor handling is not the candidate's)."""
        self.mode: AuditMode | None = None
        """The audit mode to resume around the candidate's callbacks inside a launch."""
        self.not_kernels: list[str] = []
        """Functions run through the interpreter's GridExecutor that Triton did not rewrite."""
        self._runs = 0  # completed JITFunction/InterpretedFunction runs
        self._low = 0  # completed launcher / GridExecutor calls
        self._saved: list[tuple[type, str, object]] = []

    def _inspect(self, name: str, args: tuple, kwargs: dict) -> None:
        """Hand a launch's arguments to the mode (the constructor rule refuses a kernel run on
        the weights there: what it writes would look like constants)."""
        look = getattr(self.mode, "launch_arguments", None)
        if look is not None:
            look(name, args, kwargs)

    def _note(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def _sync_count(self) -> None:
        # The larger of the two levels: every run reaches the low level once (where the wrap of
        # the driver's launcher is in place), and direct low-level launches add to it only.
        self.count = max(self._runs, self._low)

    def resumed(self, fn):
        """`fn` run with the audit back on (depth 0, the dispatch mode pushed again)."""
        if not callable(fn) or getattr(fn, "_ta_resumed", False):
            return fn
        counter = self

        def call(*args, **kwargs):
            depth, counter.depth = counter.depth, 0
            try:
                if counter.mode is not None:
                    with counter.mode:
                        return fn(*args, **kwargs)
                return fn(*args, **kwargs)
            finally:
                counter.depth = depth

        call._ta_resumed = True  # type: ignore[attr-defined]
        return call

    def _wrap_run(self, cls: type) -> None:
        original = cls.run
        counter = self

        def run(self_fn, *args, **kwargs):
            fn = getattr(self_fn, "fn", None)
            name = getattr(fn, "__name__", None) or getattr(self_fn, "__name__", "kernel")
            if callable(kwargs.get("grid")):
                kwargs["grid"] = counter.resumed(kwargs["grid"])
            hooks = getattr(self_fn, "pre_run_hooks", None)
            if isinstance(hooks, list) and hooks:
                self_fn.pre_run_hooks = [counter.resumed(h) for h in hooks]
            if counter.depth == 0:
                counter._inspect(name, args, kwargs)
            counter.depth += 1
            try:
                with _disable_current_modes():
                    result = original(self_fn, *args, **kwargs)
            except BaseException:
                counter.failed = True
                raise
            finally:
                counter.depth -= 1
                if isinstance(hooks, list) and hooks:
                    self_fn.pre_run_hooks = hooks
            # Only a launch that completed counts: a kernel that raises (and a `try/except` that
            # falls back to PyTorch) must not satisfy "at least one Triton launch".
            if not kwargs.get("warmup"):
                counter._runs += 1
                counter._sync_count()
                counter._note(name)
            return result

        self._saved.append((cls, "run", original))
        cls.run = run

    def _wrap_grid_executor(self) -> None:
        from triton.runtime.interpreter import GridExecutor, InterpretedFunction

        original = GridExecutor.__call__
        counter = self

        def call(self_gx, *args, **kwargs):
            fn = self_gx.fn
            rewritten = InterpretedFunction.rewritten_fn.values()
            if not any(fn is r for r in rewritten):
                what = getattr(fn, "__name__", type(fn).__name__)
                if what not in counter.not_kernels:
                    counter.not_kernels.append(what)
                if counter.mode is not None:
                    counter.mode.compute[
                        f"{what} run through the interpreter's GridExecutor (not a Triton kernel)"
                    ] += 1
            grid, hooks = self_gx.grid, self_gx.pre_run_hooks
            if counter.depth == 0:
                counter._inspect(getattr(fn, "__name__", "kernel"), args, kwargs)
            self_gx.grid = counter.resumed(grid) if callable(grid) else grid
            self_gx.pre_run_hooks = [counter.resumed(h) for h in hooks]
            counter.depth += 1
            try:
                with _disable_current_modes():
                    result = original(self_gx, *args, **kwargs)
            except BaseException:
                counter.failed = True
                raise
            finally:
                counter.depth -= 1
                self_gx.grid, self_gx.pre_run_hooks = grid, hooks
            counter._low += 1
            counter._sync_count()
            counter._note(getattr(fn, "__name__", "kernel"))
            return result

        self._saved.append((GridExecutor, "__call__", original))
        GridExecutor.__call__ = call

    def _wrap_launchers(self) -> None:
        """The GPU drivers' launcher classes (what `CompiledKernel.run` calls)."""
        import importlib

        counter = self
        for modname, clsname in (
            ("triton.backends.nvidia.driver", "CudaLauncher"),
            ("triton.backends.amd.driver", "HIPLauncher"),
        ):
            try:
                cls = getattr(importlib.import_module(modname), clsname)
            except Exception:  # noqa: BLE001 - a backend this build lacks
                continue
            original = cls.__call__

            def call(self_l, *args, __original=original, **kwargs):
                result = __original(self_l, *args, **kwargs)
                counter._low += 1
                counter._sync_count()
                return result

            self._saved.append((cls, "__call__", original))
            cls.__call__ = call

    def __enter__(self) -> LaunchCounter:
        import os

        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        self._wrap_run(JITFunction)
        self._wrap_run(InterpretedFunction)
        self._wrap_grid_executor()
        if os.environ.get("TA_DEVICE") == "cuda":
            self._wrap_launchers()
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, attr, original in reversed(self._saved):
            setattr(cls, attr, original)
        self._saved.clear()
