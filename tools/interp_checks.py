"""What the Triton interpreter does differently from a GPU, made to match (candidate job, CPU).

- **tl.dot's precision.** On a GPU, `tl.dot` of fp32 data with the default `input_precision`
  ("tf32") rounds both operands to TF32 (10 mantissa bits) before the tensor cores multiply them;
  the interpreter multiplies in full fp32, so a kernel within tolerance on the CPU could be far
  outside it on the GPU. Here fp32 operands of a TF32 dot are rounded the same way (to nearest,
  ties away from zero, as `cvt.rna.tf32.f32` does; hardware that truncates instead errs on the
  same scale). "ieee" and "tf32x3" stay exact.
- **Programs run one after another.** A GPU runs a launch's programs concurrently, so a program
  that reads what another program of the same launch wrote without an atomic (a non-atomic
  accumulation across programs, a result one program publishes to the others) computes a value
  that depends on scheduling; the interpreter, running them in order, always gets the sequential
  answer. `RaceDetector` records, for one armed forward, which program loaded and which stored
  each address, and reports a launch in which a program loaded an address another program stored
  non-atomically. Launches that use atomics are left out (a counter or lock can order them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_RECORDED = 1 << 25
"""Addresses recorded per launch; past this the launch is not checked (memory, not safety)."""


def _round_tf32(a: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).astype(np.uint32)
    return np.where(finite, rounded, bits).view(np.float32)


class RaceDetector:
    """Cross-program load/store conflicts in interpreted launches, while `armed`."""

    def __init__(self) -> None:
        self.armed = False
        self.findings: list[dict[str, Any]] = []
        self._launch = 0
        self._reset()

    def _reset(self) -> None:
        self._pid = 0
        self._loads: list[tuple[int, np.ndarray]] = []
        self._stores: list[tuple[int, np.ndarray]] = []
        self._recorded = 0
        self._atomic = False

    def _record(self, into: list, ptrs: Any, mask: Any) -> None:
        if not self.armed or self._atomic or self._recorded > MAX_RECORDED:
            return
        try:
            addr = np.asarray(ptrs.data, dtype=np.uint64)
            m = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape)
            picked = addr[m].ravel()
        except Exception:  # noqa: BLE001 - a shape the interpreter accepted but we do not
            return
        self._recorded += picked.size
        into.append((self._pid, picked))

    def new_launch(self, grid: tuple[int, int, int]) -> None:
        self.check()
        self._launch += 1
        self._grid = grid
        self._reset()

    def set_program(self, x: int, y: int, z: int) -> None:
        g = getattr(self, "_grid", (1, 1, 1))
        self._pid = (x * g[1] + y) * g[2] + z

    def check(self) -> None:
        """Look for a conflict in the launch recorded so far (then forget it)."""
        if not self.armed or self._atomic or not self._stores or not self._loads:
            self._reset()
            return
        if self._recorded > MAX_RECORDED:
            self._reset()
            return
        s_addr = np.concatenate([a for _, a in self._stores])
        s_pid = np.concatenate([np.full(a.size, p, dtype=np.int64) for p, a in self._stores])
        order = np.argsort(s_addr, kind="stable")
        s_addr, s_pid = s_addr[order], s_pid[order]
        uniq, start = np.unique(s_addr, return_index=True)
        lo = np.minimum.reduceat(s_pid, start)
        hi = np.maximum.reduceat(s_pid, start)
        for pid, addrs in self._loads:
            if not addrs.size:
                continue
            i = np.searchsorted(uniq, addrs)
            i = np.clip(i, 0, len(uniq) - 1)
            hit = uniq[i] == addrs
            other = hit & ((lo[i] != pid) | (hi[i] != pid))
            if other.any():
                j = int(np.argmax(other))
                writer = int(lo[i[j]]) if lo[i[j]] != pid else int(hi[i[j]])
                self.findings.append(
                    {
                        "launch": self._launch,
                        "reader": pid,
                        "writer": writer,
                        "addresses": int(other.sum()),
                    }
                )
                break
        self._reset()


def install(builder: Any = None) -> RaceDetector:
    """Patch the interpreter's builder (instance attributes, for this job's lifetime)."""
    if builder is None:
        from triton.runtime.interpreter import interpreter_builder as builder
    det = RaceDetector()
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

    def create_masked_load(ptrs, mask, other, cache_policy, is_volatile):
        det._record(det._loads, ptrs, mask)
        return cls.create_masked_load(builder, ptrs, mask, other, cache_policy, is_volatile)

    def create_masked_store(ptrs, value, mask, cache_policy):
        det._record(det._stores, ptrs, mask)
        return cls.create_masked_store(builder, ptrs, value, mask, cache_policy)

    builder.create_dot = create_dot
    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx
    builder.create_masked_load = create_masked_load
    builder.create_masked_store = create_masked_store
    for name in (
        "create_atomic_rmw",
        "create_atomic_cas",
        "create_atomic_load",
        "create_atomic_store",
    ):
        method = getattr(cls, name, None)
        if method is None:
            continue

        def atomic(*args, __method=method, **kwargs):
            det._atomic = True
            return __method(builder, *args, **kwargs)

        setattr(builder, name, atomic)
    return det
