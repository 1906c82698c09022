"""What the Triton interpreter does differently from a GPU, made to match (candidate job, CPU).

- **tl.dot's precision.** On a GPU, `tl.dot` of fp32 data with the default `input_precision`
  ("tf32") rounds both operands to TF32 (10 mantissa bits) before the tensor cores multiply them;
  the interpreter multiplies in full fp32, so a kernel within tolerance on the CPU could be far
  outside it on the GPU. Here fp32 operands of a TF32 dot are rounded the same way (to nearest,
  ties away from zero, as `cvt.rna.tf32.f32` does; hardware that truncates instead errs on the
  same scale). "ieee" and "tf32x3" stay exact.
- **Programs run one after another**, where a GPU runs them side by side: the loads, stores and
  atomics of every program go to a `RaceDetector` (`tools.job.interp_races`), which reports a
  cross-program race and counts the work inside each launch.
- **No libdevice.** Its functions run as their `tl` or numpy equivalents while a launch is
  interpreted (`tools.job.interp_libdevice`).

`install()` patches the interpreter's builder for all of it, for the job's lifetime.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tools.job.interp_libdevice import libdevice_as_tl, wrap_grid_executor
from tools.job.interp_races import AtomicResult, RaceDetector


def _round_tf32(a: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).astype(np.uint32)
    return np.where(finite, rounded, bits).view(np.float32)


def _peek(builder: Any, cls: type, ptr: Any, mask: Any) -> np.ndarray | None:
    """The memory an atomic is about to touch (or just touched), read without recording."""
    try:
        if mask is None:
            mask = type(ptr)(np.ones_like(ptr.data, dtype=bool), None)
        import inspect

        extra = len(inspect.signature(cls.create_masked_load).parameters) - 4  # self ptr mask other
        rest = (None,) * (extra - 1) + (False,)  # cache/eviction policies, is_volatile
        return np.array(cls.create_masked_load(builder, ptr, mask, None, *rest).data)
    except Exception:  # noqa: BLE001 - a pointer shape we do not read: counts as changed
        return None


def install(builder: Any = None) -> RaceDetector:
    """Patch the interpreter's builder (instance attributes, for this job's lifetime), and its
    launches for libdevice."""
    if builder is None:
        from triton.runtime.interpreter import interpreter_builder as builder

        wrap_grid_executor(libdevice_as_tl())
    det = RaceDetector()
    AtomicResult.detector = det
    cls = type(builder)

    def create_dot(a, b, d, input_precision, max_num_imprecise_acc):
        if getattr(input_precision, "name", str(input_precision)).upper() == "TF32":
            if a.data.dtype == np.float32 and b.data.dtype == np.float32:
                a = type(a)(_round_tf32(a.data), a.dtype.scalar)
                b = type(b)(_round_tf32(b.data), b.dtype.scalar)
        return cls.create_dot(builder, a, b, d, input_precision, max_num_imprecise_acc)

    def set_grid_dim(nx, ny, nz):
        det.new_launch((nx, ny, nz))
        return cls.set_grid_dim(builder, nx, ny, nz)

    def set_grid_idx(x, y, z):
        det.set_program(x, y, z)
        return cls.set_grid_idx(builder, x, y, z)

    # `*rest`: the cache/eviction/volatile arguments, whose number differs between Triton
    # versions (3.9: cache_policy, is_volatile; 3.6 one more, seen on the H200).
    def create_masked_load(ptrs, mask, other, *rest):
        if isinstance(getattr(mask, "data", None), AtomicResult):
            det._waited()
        det._record(det._loads, ptrs, mask)
        return cls.create_masked_load(builder, ptrs, mask, other, *rest)

    def create_masked_store(ptrs, value, mask, *rest):
        if isinstance(getattr(mask, "data", None), AtomicResult):
            det._waited()
        det._record(det._stores, ptrs, mask)
        return cls.create_masked_store(builder, ptrs, value, mask, *rest)

    builder.create_dot = create_dot
    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx
    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    # An atomic's own accesses are not plain loads and stores (atomic_load/store and poll go
    # through the builder's masked load and store: not recorded as such), and its addresses
    # and moment are what can order the programs.
    for name, mask_at in (
        ("create_atomic_rmw", 3),
        ("create_atomic_cas", None),
        ("create_atomic_load", 1),
        ("create_atomic_store", 2),
        ("create_atomic_poll", None),
    ):
        method = getattr(cls, name, None)
        if method is None:
            continue

        def atomic(*args, __method=method, __mask_at=mask_at, **kwargs):
            ptr = args[1] if __method.__name__ == "create_atomic_rmw" else args[0]
            mask = args[__mask_at] if __mask_at is not None and len(args) > __mask_at else None
            det._in_atomic += 1
            try:
                before = _peek(builder, cls, ptr, mask) if det.armed else None
                result = __method(builder, *args, **kwargs)
                after = _peek(builder, cls, ptr, mask) if det.armed else None
            finally:
                det._in_atomic -= 1
            changed = before is None or after is None or before.tobytes() != after.tobytes()
            det._record_atomic(ptr, mask, changed)
            data = getattr(result, "data", None)
            if det.armed and isinstance(data, np.ndarray):
                result.data = data.view(AtomicResult)
            return result

        setattr(builder, name, atomic)
    return det
