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


class AuditMode(TorchDispatchMode):
    def __init__(self, poison: bool = True) -> None:
        super().__init__()
        self.poison = poison
        self.compute: Counter[str] = Counter()
        self.library: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _op_name(func)
        out = func(*args, **kwargs)
        if name in LIBRARY_OPS:
            self.library[f"aten.{name}"] += 1
        elif name == "_to_copy" and "dtype" in kwargs and args and kwargs["dtype"] != getattr(
            args[0], "dtype", None
        ):
            self.compute["aten._to_copy (dtype conversion)"] += 1
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


class LaunchCounter:
    """Counts Triton launches and suspends torch modes while a kernel runs."""

    def __init__(self) -> None:
        self.count = 0
        self.failed = False
        """True when an exception escaped a kernel launch (compile or interpreter error)."""
        self.names: list[str] = []
        self._saved: list[tuple[type, object]] = []

    def _wrap(self, cls: type) -> None:
        original = cls.run
        counter = self

        def run(self_fn, *args, **kwargs):
            counter.count += 1
            fn = getattr(self_fn, "fn", None)
            name = getattr(fn, "__name__", None) or getattr(self_fn, "__name__", "kernel")
            if name not in counter.names:
                counter.names.append(name)
            try:
                with _disable_current_modes():
                    return original(self_fn, *args, **kwargs)
            except BaseException:
                counter.failed = True
                raise

        self._saved.append((cls, original))
        cls.run = run

    def __enter__(self) -> LaunchCounter:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        self._wrap(JITFunction)
        self._wrap(InterpretedFunction)
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, original in reversed(self._saved):
            cls.run = original
        self._saved.clear()


@contextlib.contextmanager
def audited(poison: bool = True):
    """Context for running one forward: yields (AuditMode, LaunchCounter)."""
    with LaunchCounter() as launches, AuditMode(poison=poison) as mode:
        yield mode, launches
