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
RNG_OPS = {"rand", "randn", "randint", "randperm", "random_", "uniform_", "normal_"}
"""Random draws that read no tensor's values (sizes and scalars only): Inductor's wrapper draws
the seeds of `tl.rand` (dropout) with `aten.randint`. Not compute: nothing of the inputs can
flow through them."""
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
        elif name in RNG_OPS and not _reads_tensor_values(name, args, kwargs):
            pass
        elif name in ALLOC_OPS or name in VIEW_OPS:
            if self.poison and name in POISON_OPS and isinstance(out, torch.Tensor):
                _fill_poison(out)
        else:
            self.compute[f"aten.{name}"] += 1
        return out


def _reads_tensor_values(name: str, args: tuple, kwargs: dict) -> bool:
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


def _toolchain_dirs() -> tuple[str, ...]:
    import os

    import triton

    return tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep
        for m in (triton, torch, numpy_module())
    )


def numpy_module():
    import numpy

    return numpy


_TOOLCHAIN: list[tuple[str, ...]] = []


def _called_by_toolchain() -> bool:
    """Inside a launch, whether the round-trip was asked for by Triton's (or torch's, numpy's)
    own code: the interpreter moves a launch's arguments through numpy. Python of anyone else
    running inside a launch (a `constexpr_function`, a helper the kernel body calls under the
    interpreter) is the candidate's, and its round-trips are compute like anywhere else."""
    import sys

    if not _TOOLCHAIN:
        _TOOLCHAIN.append(_toolchain_dirs())
    frame = sys._getframe(2)  # <- the wrapper <- its caller
    name = frame.f_code.co_filename if frame is not None else ""
    return name.startswith(_TOOLCHAIN[0])


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
                if launches.depth == 0 or not _called_by_toolchain():
                    mode.compute[__label] += 1
                return __get(self)

            wrapper: object = property(getter)
        else:

            def wrapper(*args, __original=original, __label=label, **kwargs):
                if launches.depth == 0 or not _called_by_toolchain():
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


# The constructor rule (issue 33/34). The constructor runs before any trial's seed exists, so what
# it computes from constants (a causal mask made with `torch.tril`, a positional-encoding table,
# an index table) cannot depend on the inputs: it is setup, as in the reference's own `__init__`.
# What it must not do is work on the *weights*: values drawn at random under the harness's seed
# (and, during the weight copy, the reference's parameters). `W2 @ W1` folded in `__init__` (by a
# library call, or by whitelisted arithmetic in a Python loop) moves forward's work out of the
# audit. So every tensor's values carry a *lineage*: the random draws (or copied reference
# weights) they were computed from. Views and copies keep it (a pre-transposed weight is a
# re-layout, not compute); compute on values of no lineage is setup; compute on values of a
# lineage is allowed only as initialisation: an elementwise op of `torch.nn.init`
# (INIT_ARITHMETIC) on ONE seed-dependent tensor, with Python scalars or 0-d/1-element tensors
# beside it. Combining two seed-dependent tensors, or one with a non-scalar tensor of constants,
# or any other op on them (matmul, sum, conv, indexing), is a fold: `cheat`.
INIT_ARITHMETIC = frozenset(
    {
        "mul_",
        "add_",
        "sub_",
        "div_",
        "clamp_",
        "clamp_min_",
        "clamp_max_",
        "erfinv_",
        "abs_",
        "neg_",
        "sqrt_",
        "mul",
        "add",
        "sub",
        "div",
        "neg",
        "abs",
        "sign",
        "sqrt",
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
        "any",
        "all",
    }
)
RANDOM_FILLS = frozenset(
    {
        "uniform_",
        "normal_",
        "bernoulli_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
    }
)
VALUE_PRESERVING = frozenset({"_cudnn_rnn_flatten_weight", "cat", "stack", "flip", "roll"})
"""Ops that move values without computing new ones (re-layout of a weight, an RNN's flat weight
buffer): their outputs keep their inputs' lineage and they are not compute."""


def _storage_key(t: torch.Tensor) -> tuple | None:
    if t.layout != torch.strided or t.device.type == "meta":
        return None
    try:
        return (t.device.type, t.device.index, t.untyped_storage().data_ptr())
    except Exception:  # noqa: BLE001 - a tensor without storage (functional, sparse...)
        return None


def _view_key(t: torch.Tensor) -> tuple:
    return (_storage_key(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()))


def _covers_storage(t: torch.Tensor) -> bool:
    try:
        return (
            t.is_contiguous()
            and t.storage_offset() == 0
            and t.numel() * t.element_size() == t.untyped_storage().nbytes()
        )
    except Exception:  # noqa: BLE001
        return False


class ConstructorAuditMode(AuditMode):
    """The audit of the constructor and the weight copy: `AuditMode`'s classification, with
    compute judged by the constructor rule above instead of refused outright. Lineages are
    kept per storage (a view written in place taints its base); every tensor seen is held
    until the mode ends, so a storage address is never reused for another tensor meanwhile."""

    def __init__(self, launches: LaunchCounter | None = None) -> None:
        super().__init__(poison=False, launches=launches)
        self.lineage: dict[tuple, frozenset[int]] = {}
        self._held: list[torch.Tensor] = []
        self._next = 0
        self.folds: Counter[str] = Counter()
        """Compute on seed-dependent values other than initialisation: the cheats."""
        self.python_reads = 0

    # -- lineages
    def _new_lineage(self) -> frozenset[int]:
        self._next += 1
        return frozenset({self._next})

    def mark(self, t: torch.Tensor) -> None:
        """Give `t` a lineage of its own (a reference weight about to be copied)."""
        key = _storage_key(t)
        if key is not None and t.is_floating_point():
            self._held.append(t)
            self.lineage[key] = self.lineage.get(key, frozenset()) | self._new_lineage()

    def of(self, t: object) -> frozenset[int]:
        if not isinstance(t, torch.Tensor):
            return frozenset()
        key = _storage_key(t)
        return self.lineage.get(key, frozenset()) if key is not None else frozenset()

    def _set(self, t: object, lin: frozenset[int], replace: bool = False) -> None:
        if not isinstance(t, torch.Tensor):
            return
        key = _storage_key(t)
        if key is None:
            return
        self._held.append(t)
        if replace:
            self.lineage[key] = lin
        elif lin:
            self.lineage[key] = self.lineage.get(key, frozenset()) | lin

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils._pytree import tree_flatten

        kwargs = kwargs or {}
        name = _op_name(func)
        namespace = getattr(func, "namespace", "aten")
        flat_in = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        for a in flat_in:
            self._held.append(a)
        before = self.launches.count if self.launches is not None else 0
        out = func(*args, **kwargs)
        flat_out = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        inplace = name.endswith("_") or "out" in kwargs
        target = args[0] if inplace and args and isinstance(args[0], torch.Tensor) else None
        if "out" in kwargs and isinstance(kwargs["out"], torch.Tensor):
            target = kwargs["out"]
        seeded = [a for a in flat_in if a.is_floating_point() and self.of(a)]
        union = frozenset().union(*(self.of(a) for a in flat_in)) if flat_in else frozenset()

        if namespace not in ATEN_NAMESPACES:
            launched = self.launches is not None and self.launches.count > before
            if not launched:
                self.compute[f"{namespace}.{name} (custom operator, no Triton launch inside)"] += 1
            for o in flat_out:
                self._set(o, union)
            return out
        if name in RANDOM_FILLS and not _reads_tensor_values(name, args, kwargs):
            fresh = self._new_lineage()
            if target is not None:
                # a fill of the whole storage replaces its values (a re-initialised weight is
                # one draw, not two); a fill of a slice adds a draw to the rest
                self._set(target, fresh, replace=_covers_storage(target))
            for o in flat_out:
                self._set(o, fresh)
            return out
        if name in ("_local_scalar_dense", "item"):
            if seeded:
                self.python_reads += 1
                if self.python_reads > SCALAR_READ_LIMIT:
                    self.folds["the weights' values read into Python (.item()/float())"] += 1
            return out
        if name in ("lift_fresh", "lift_fresh_copy"):
            return out  # a table from Python values: constants (weights read into Python are counted above)
        if name in ALLOC_OPS or name in VIEW_OPS or name in VALUE_PRESERVING:
            if name == "copy_" and target is not None:
                self._set(target, union)
            elif target is not None:
                self._set(target, union)
            for o in flat_out:
                self._set(o, union)
            return out
        self._compute(name, flat_in, flat_out, seeded, union)
        return out

    def _compute(
        self,
        name: str,
        flat_in: list[torch.Tensor],
        flat_out: list[torch.Tensor],
        seeded: list[torch.Tensor],
        union: frozenset[int],
    ) -> None:
        """An aten compute op in the constructor, judged by the constructor rule: setup from
        constants, or initialisation arithmetic on one draw (a scalar operand at most), keeps
        its lineage; anything else on seed-dependent values is a fold (`folds`)."""
        if not seeded:
            for o in flat_out:  # setup from constants
                self._set(o, union)
            return
        lineages = frozenset().union(*(self.of(a) for a in seeded))
        others = [a for a in flat_in if a.is_floating_point() and not self.of(a)]
        # One seed-dependent operand (or the same view twice, `x * x`): two slices of one draw
        # multiplied together are a fold as much as two weights are.
        single = len({_view_key(a) for a in seeded}) == 1
        if (
            name in INIT_ARITHMETIC
            and len(lineages) == 1
            and single
            and all(a.numel() <= 1 for a in others)
        ):
            for o in flat_out:
                self._set(o, lineages)
            return
        label = "library" if name in LIBRARY_OPS else "compute"
        why = (
            f"{len(lineages)} random draws / copied weights combined"
            if len(lineages) > 1
            else "the weights combined with a tensor of constants"
            if any(a.numel() > 1 for a in others)
            else "not parameter initialisation"
        )
        self.folds[
            f"aten.{name} on seed-dependent values: weights or random draws ({label}: {why})"
        ] += 1
        for o in flat_out:
            self._set(o, union)

    def launch_arguments(self, name: str, args: tuple, kwargs: dict) -> None:
        seeded = [
            a
            for a in list(args) + list(kwargs.values())
            if isinstance(a, torch.Tensor) and a.is_floating_point() and self.of(a)
        ]
        if seeded:
            self.folds[f"Triton kernel {name} run on the weights in the constructor"] += 1

    def release(self) -> None:
        self._held.clear()
        self.lineage.clear()


@contextlib.contextmanager
def constructor_audited():
    """Context for the constructor and the weight copy: yields (ConstructorAuditMode,
    LaunchCounter). `mode.folds` is what the constructor rule refuses; `mode.compute` holds only
    what `AuditMode` refuses anywhere (custom operators, escapes of weights to numpy)."""
    with LaunchCounter() as launches:
        mode = ConstructorAuditMode(launches=launches)
        launches.mode = mode
        with mode, _watch_constructor_escapes(mode, launches):
            try:
                yield mode, launches
            finally:
                pass


@contextlib.contextmanager
def _watch_constructor_escapes(mode: ConstructorAuditMode, launches: LaunchCounter):
    """numpy/DLPack/Python round-trips in the constructor: tables built in numpy and brought in
    (`torch.from_numpy`) are constants; a seed-dependent tensor (a weight) going out to numpy or
    Python is a fold done outside torch."""
    saved = []
    for owner, name in _escapes():
        if name in ("from_numpy", "frombuffer", "from_dlpack", "load", "save"):
            continue
        if not hasattr(owner, name) and name not in vars(owner):
            continue
        own = name in vars(owner)
        original = vars(owner)[name] if own else getattr(owner, name)
        label = f"the weights taken out of torch in the constructor ({name})"

        def seeded(args: tuple) -> bool:
            return any(isinstance(a, torch.Tensor) and mode.of(a) for a in args)

        if isinstance(original, property):

            def getter(self, __get=original.fget, __label=label):
                if launches.depth == 0 and seeded((self,)):
                    mode.folds[__label] += 1
                return __get(self)

            wrapper: object = property(getter)
        else:

            def wrapper(*args, __original=original, __label=label, **kwargs):
                if launches.depth == 0 and seeded(args):
                    mode.folds[__label] += 1
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
