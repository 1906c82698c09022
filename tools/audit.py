"""What runs inside `ModelNew.forward` (job-process side).

- Triton launches are counted by wrapping `JITFunction.run` (GPU) and `InterpretedFunction.run`
  (CPU interpreter). While a kernel runs, all torch modes are suspended, so the interpreter's own
  tensor handling is not mistaken for PyTorch compute.
- A `TorchDispatchMode` records every aten op. Allocations and views are free; library
  matmul/conv ops are "library" (allowed only under the `allow-library` policy); anything else is
  PyTorch compute, which the strict policy rejects.
- Fresh allocations (`empty*`) are filled with a poison value (NaN for floats, a large sentinel for
  integers), so an output that was never written, or that merely reuses memory which happened to
  hold the reference's result, cannot pass.
"""

from __future__ import annotations

import contextlib
import math
import types
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

ALLOC_OPS = {
    "empty",
    "empty_strided",
    "empty_like",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "new_zeros",
    "ones",
    "ones_like",
    "new_ones",
    "full",
    "full_like",
    "new_full",
    "fill_",
    "zero_",
    "scalar_tensor",
    "arange",
    "lift_fresh",
    "lift_fresh_copy",
    "resize_",
}
POISON_OPS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"}
VIEW_OPS = {
    "view",
    "_unsafe_view",
    "reshape",
    "_reshape_alias",
    "as_strided",
    "expand",
    "expand_as",
    "permute",
    "transpose",
    "t",
    "squeeze",
    "unsqueeze",
    "select",
    "slice",
    "split",
    "split_with_sizes",
    "chunk",
    "unbind",
    "detach",
    "alias",
    "view_as",
    "narrow",
    "flatten",
    "unflatten",
    "clone",
    "copy_",
    "contiguous",
    "_to_copy",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
    "is_same_size",
    "_local_scalar_dense",
    "item",
    "size",
    "stride",
    "numel",
    "dim",
    "record_stream",
    "set_",
    "_record_function_enter",
    "_record_function_enter_new",
    "_record_function_exit",
}
LIBRARY_OPS = {
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "addbmm",
    "matmul",
    "mv",
    "addmv",
    "linear",
    "convolution",
    "_convolution",
    "conv1d",
    "conv2d",
    "conv3d",
    "cudnn_convolution",
    "convolution_overrideable",
    "mkldnn_convolution",
    "_scaled_mm",
    "_int_mm",
}
INT_POISON = 0x5A5A5A5  # an unlikely value that still fits int32


def _op_name(func) -> str:
    # aten.add.Tensor -> "add"
    name = getattr(func, "__name__", str(func))
    return name.split(".")[0]


# Operator namespaces whose ops are classified by name; an op of any other namespace (one a
# candidate or a library registered) is compute unless a Triton launch ran inside it: its
# name says nothing (a `mylib::clone` with a Python body is not a copy).
ATEN_NAMESPACES = frozenset({"aten", "prims"})
SCALAR_READ_LIMIT = 8
"""Tensor values read into Python in one forward (`.item()`, `float(t)`) beyond which it is
compute in Python: a kernel reads a scalar parameter or two, not the data."""
HOST_DATA_LIMIT = 8
"""Elements of a tensor built from Python values (`torch.tensor(list)`) beyond which it is
compute in Python written back."""


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
        name = _op_name(func)
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
        elif name in ALLOC_OPS or name in VIEW_OPS:
            if self.poison and name in POISON_OPS and isinstance(out, torch.Tensor):
                _fill_poison(out)
        else:
            self.compute[f"aten.{name}"] += 1
        return out


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


# Ways out of torch that the dispatch mode cannot see: compute in numpy or plain Python on the
# tensor's values, then wrap the result as a tensor again.
def _escapes() -> list[tuple[object, str]]:
    import torch.utils.dlpack

    return [
        (torch.Tensor, "numpy"),
        (torch.Tensor, "__array__"),
        (torch.Tensor, "tolist"),
        (torch.Tensor, "__dlpack__"),
        (torch.Tensor, "__cuda_array_interface__"),
        (torch.UntypedStorage, "tolist"),
        (torch, "from_numpy"),
        (torch, "frombuffer"),
        (torch, "from_dlpack"),
        (torch.utils.dlpack, "from_dlpack"),
        (torch.utils.dlpack, "to_dlpack"),
        (torch, "save"),
        (torch, "load"),
    ]


@contextlib.contextmanager
def _watch_escapes(mode: AuditMode, launches: LaunchCounter):
    saved = []
    for owner, name in _escapes():
        if not hasattr(owner, name) and name not in vars(owner):
            continue
        own = name in vars(owner)
        original = vars(owner)[name] if own else getattr(owner, name)
        label = f"{name} (numpy/DLPack/Python round-trip outside Triton)"

        if isinstance(original, property):

            def getter(self, __get=original.fget, __label=label):
                if launches.depth == 0:
                    mode.compute[__label] += 1
                return __get(self)

            wrapper: object = property(getter)
        else:

            def wrapper(*args, __original=original, __label=label, **kwargs):
                if launches.depth == 0:
                    mode.compute[__label] += 1
                return __original(*args, **kwargs)

        saved.append((owner, name, own, vars(owner).get(name)))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, own, value in reversed(saved):
            if own:
                setattr(owner, name, value)
            else:
                delattr(owner, name)


@contextlib.contextmanager
def audited(poison: bool = True):
    """Context for running one forward: yields (AuditMode, LaunchCounter)."""
    with LaunchCounter() as launches:
        mode = AuditMode(poison=poison, launches=launches)
        launches.mode = mode
        with mode, _watch_escapes(mode, launches):
            yield mode, launches


# ------------------------------------------------------------------------------------------
# A second, independent observer: the PyTorch profiler.
#
# The dispatch mode above lives on a Python-visible mode stack, so a candidate can pop it
# (`_pop_mode`, `_disable_current_modes`), exclude the Python dispatch key, or run torch inside
# a callback that executes while a launch has the modes suspended (a callable grid). The
# profiler's RecordFunction hooks sit in the C++ dispatcher and see every aten op regardless.
# Under the Triton interpreter a launch only performs allocation/copy ops, so nothing inside a
# forward needs excluding.

PROFILER_FREE = (
    ALLOC_OPS
    | VIEW_OPS
    | {
        "to",
        "type_as",
        "resolve_conj",
        "resolve_neg",
        "result_type",
        "is_nonzero",
        "pin_memory",
        "is_pinned",
        "empty_like",
        "_has_compatible_shallow_copy_type",
        "_nested_tensor_from_mask_left_aligned",
        "record_stream",
        "detach_",
        "lift",
        "requires_grad_",
        "as_strided_",
        "squeeze_",
        "unsqueeze_",
        "t_",
        "transpose_",
        "empty_permuted",
        "resize_as_",
        "_copy_from",
        "_copy_from_and_resize",
    }
)


class ProfilerObserver:
    """Records aten ops inside marked forward calls with `torch.autograd.profiler`."""

    def __init__(self) -> None:
        import secrets

        self.marker = f"ta_forward_{secrets.token_hex(8)}"
        self.available = False
        self.tampered: list[str] = []
        self.forwards = 0
        self.exit_error: str | None = None
        """Why the profiler failed to stop, if it did (its op record is then lost)."""
        self._prof = None
        self._stopped = False

    def __enter__(self) -> ProfilerObserver:
        try:
            self._prof = torch.autograd.profiler.profile(record_shapes=False)
            self._prof.__enter__()
            self.available = True
        except Exception:  # another profiler running, or none in this build: best effort
            self._prof = None
        return self

    @contextlib.contextmanager
    def forward(self):
        """Mark one forward call; checks the profiler is still on when it returns."""
        if not self.available:
            yield
            return
        self.forwards += 1
        with torch.autograd.profiler.record_function(self.marker):
            yield
        if not torch.autograd._profiler_enabled():
            self.tampered.append("the harness's profiler was switched off during forward")
            self.available = False

    def __exit__(self, *exc: object) -> None:
        """Stop the profiler; the job stops it after forward, and its ExitStack calls this again."""
        if self._prof is None or self._stopped:
            return
        self._stopped = True
        try:
            self._prof.__exit__(None, None, None)
        except Exception as e:
            # Seen on the H200 (torch 2.11) with honest kernels: the profiler can fail to stop for
            # reasons of its own. Switching it off *during* forward is caught in `forward()`;
            # here only the op record is lost, so fall back to the dispatch-mode audit alone.
            self.exit_error = f"{type(e).__name__}: {e}"[:200]
            self.available = False

    def ops(self) -> tuple[list[str], list[str]]:
        """(compute ops, library ops) seen at the top level of the marked forward calls."""
        if self._prof is None or not self.available:
            return [], []
        try:
            events = self._prof.function_events
        except Exception as e:
            self.tampered.append(
                f"the harness's profiler results are unreadable ({type(e).__name__})"
            )
            return [], []
        markers = [e for e in events if e.name == self.marker]
        if len(markers) != self.forwards:
            self.tampered.append(
                f"{self.forwards} forward calls were made but the profiler recorded {len(markers)}"
            )
        compute: list[str] = []
        library: list[str] = []

        def visit(ev) -> None:
            for child in ev.cpu_children:
                name = child.name
                if not name.startswith("aten::"):
                    visit(child)  # record_function ranges (the candidate's own or torch's)
                    continue
                op = name[len("aten::") :].split(".")[0]
                if op in LIBRARY_OPS:
                    if f"aten.{op}" not in library:
                        library.append(f"aten.{op}")
                elif op in PROFILER_FREE or op.startswith("sym_"):
                    continue
                elif f"aten.{op}" not in compute:
                    compute.append(f"aten.{op}")

        for m in markers:
            visit(m)
        return compute, library


# ------------------------------------------------------------------------------------------
# Integrity: what the candidate must not replace in its process.


def _integrity_targets() -> list[tuple[str, object, str]]:
    import importlib
    import pickle
    import time

    import triton

    targets: list[tuple[str, object, str]] = []

    def add(label: str, owner: object, *names: str) -> None:
        for n in names:
            if hasattr(owner, n):
                targets.append((f"{label}.{n}", owner, n))

    add(
        "time",
        time,
        "perf_counter",
        "perf_counter_ns",
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
    )
    add(
        "torch",
        torch,
        "allclose",
        "isclose",
        "equal",
        "manual_seed",
        "save",
        "load",
        "empty",
        "empty_like",
        "randn",
    )
    add("torch.testing", torch.testing, "assert_close")
    add(
        "torch.Tensor",
        torch.Tensor,
        "clone",
        "to",
        "cpu",
        "detach",
        "data_ptr",
        "untyped_storage",
        "numel",
        "__eq__",
        "copy_",
        "contiguous",
        "__reduce_ex__",
    )
    add(
        "torch.nn.Module",
        torch.nn.Module,
        "__call__",
        "_call_impl",
        "to",
        "state_dict",
        "load_state_dict",
    )
    add(
        "torch.cuda", torch.cuda, "synchronize", "Event", "Stream", "current_stream", "is_available"
    )
    add("torch.autograd", torch.autograd, "_profiler_enabled")
    add("torch.autograd.profiler", torch.autograd.profiler, "profile", "record_function")
    import torch.utils._python_dispatch as pd

    add(
        "torch.utils._python_dispatch",
        pd,
        "_pop_mode",
        "_push_mode",
        "_disable_current_modes",
        "_pop_mode_temporarily",
        "_get_current_dispatch_mode",
        "_len_torch_dispatch_stack",
        "_pop_torch_dispatch_stack",
    )
    add(
        "torch._C",
        torch._C,
        "_pop_torch_dispatch_stack",
        "_push_on_torch_dispatch_stack",
        "_len_torch_dispatch_stack",
        "_DisableTorchDispatch",
        "_ExcludeDispatchKeyGuard",
        "_disabled_torch_dispatch_impl",
    )
    add("pickle", pickle, "dumps", "dump", "Pickler")
    try:
        import triton.testing as tt

        add("triton.testing", tt, "do_bench", "do_bench_cudagraph")
    except Exception:
        pass
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    add("triton.JITFunction", JITFunction, "run", "__getitem__")
    add("triton.InterpretedFunction", InterpretedFunction, "run", "__getitem__")
    from triton.runtime import interpreter

    add("triton.GridExecutor", interpreter.GridExecutor, "__call__")
    add("triton.interpreter_builder", interpreter.interpreter_builder, *_BUILDER_METHODS)
    import _thread
    import threading

    add("_thread", _thread, "start_new_thread", "start_new")
    add("threading", threading, "_start_new_thread", "_start_joinable_thread")
    add("torch._C", torch._C, "_dispatch_library")
    add("triton", triton, "jit", "cdiv")
    from multiprocessing import connection

    add(
        "multiprocessing.connection.Connection",
        connection.Connection,
        "send_bytes",
        "send",
        "close",
    )
    for modname in (
        "tools.compare",
        "tools.handover",
        "tools.worker",
        "tools.audit",
        "tools.guard",
        "tools.sandbox",
        "tools.devshim",
    ):
        mod = importlib.import_module(modname)
        for n, v in list(vars(mod).items()):
            if callable(v) and not n.startswith("__"):
                targets.append((f"{modname}.{n}", mod, n))
                if isinstance(v, type) and v.__module__ == modname:
                    for m, f in list(vars(v).items()):
                        if callable(f) or isinstance(f, (staticmethod, classmethod, property)):
                            targets.append((f"{modname}.{n}.{m}", v, m))
        for n in (
            "VIOLATIONS",
            "TOOLCHAIN",
            "NATIVE_DENY",
            "_ALLOWED_WRITE_PREFIXES",
            "_WRITE_FLAGS",
            "_state",
            "ALLOC_OPS",
            "VIEW_OPS",
            "LIBRARY_OPS",
            "POISON_OPS",
            "PROFILER_FREE",
        ):
            if hasattr(mod, n):
                targets.append((f"{modname}.{n}", mod, n))
    return targets


_BUILDER_METHODS = (
    "set_grid_idx",
    "set_grid_dim",
    "create_dot",
    "create_load",
    "create_store",
    "create_masked_load",
    "create_masked_store",
)


def _get(owner: object, name: str) -> object:
    if isinstance(owner, type):
        return owner.__dict__.get(name, getattr(owner, name, None))
    return getattr(owner, name, None)


def _fingerprint(value: object) -> tuple:
    """Identity of a value plus the mutable insides that would change its behaviour: a function's
    code and defaults (`f.__code__ = ...` keeps the object), a set's or dict's contents."""
    if isinstance(value, types.MethodType):  # a fresh object on every attribute access
        return ("method", id(value.__self__)) + _fingerprint(value.__func__)
    fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    parts: tuple = (id(value),)
    if isinstance(fn, types.FunctionType):
        parts += (id(fn.__code__), repr(fn.__defaults__), repr(fn.__kwdefaults__))
    elif isinstance(value, (dict, list, set, frozenset)):
        parts += (repr(sorted(map(repr, value.items() if isinstance(value, dict) else value))),)
    return parts


class Integrity:
    """A snapshot of the harness, timers and torch entry points the candidate must not patch.

    Checked after the candidate is imported and after every forward: replacing a timer (to fake
    speed), the comparison or the audit (to fake correctness) or the guard's settings is a cheat
    even when it changes nothing the verifier relies on (the comparison runs in the parent).
    """

    def __init__(self) -> None:
        self._values = [
            (label, owner, name, _fingerprint(_get(owner, name)))
            for label, owner, name in _integrity_targets()
        ]

    def changed(self) -> list[str]:
        out = []
        for label, owner, name, fp in self._values:
            try:
                now = _fingerprint(_get(owner, name))
            except Exception:
                now = ()
            if now != fp:
                out.append(label)
        return out
