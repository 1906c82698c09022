"""PyTorch compute made unavailable during `forward` (job side; issue 34).

The dispatch-mode audit and the profiler's RecordFunction observer *observe* forward's aten ops
from inside the candidate's process, and a candidate can call a kernel below both of them:
`torch.ops.aten.relu.default.redispatch(DispatchKeySet(CPU), x)` enters the dispatcher at the CPU
key, past the Python key (the audit's mode) and the top-level call where RecordFunction fires; or
the Python key excluded from the thread's dispatch set and RecordFunction turned off around a call.
So for the span of each forward the backend kernels themselves are replaced: every aten operator
that computes (not an allocation, a view or copy, a random draw, a scalar read, nor, where the
policy allows it, a library GEMM/convolution) gets a kernel at the job's backend key (CPU or CUDA)
that records the call and raises. A call at any level of the dispatcher ends there. The
registrations are made through the C++ library handle taken before the candidate is imported (the
guard refuses `aten` registrations afterwards) and removed when forward returns, which restores
the real kernels for the harness's own work (making inputs, the mutation check); the handle is a
local of the harness, out of the candidate's reach (frames and the garbage collector's object
graph are refused to it).

Cost (CPU, unloaded): the operator list is built once a job (~3,000 aten operators, the ~1,500
with a kernel at the key are blocked); registering and removing them takes about 40 ms a forward.
The Triton interpreter and Triton's GPU launches use no aten compute (measured: `empty`, `set_`,
`copy_` only), so an honest kernel never meets a blocked operator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from tools.checks.audit_ops import ALLOC_OPS, LIBRARY_OPS, RNG_OPS, VIEW_OPS

EXEMPT = (
    ALLOC_OPS
    | VIEW_OPS
    | RNG_OPS
    | {
        "lift_fresh",
        "lift_fresh_copy",
        "_local_scalar_dense",
        "item",
        "empty",
        "empty_strided",
        "new_empty_strided",
        "set_",
        "_has_compatible_shallow_copy_type",
        "resolve_conj",
        "resolve_neg",
        "is_same_size",
        "_nested_tensor_from_mask_left_aligned",
        "record_stream",
        "_copy_from",
        "_copy_from_and_resize",
        "_resize_output_",
        "resize_as_",
        "_reshape_copy",
        "_unsafe_index",
        "randint",
        "bernoulli_",
        "_assert_async",
        "_functional_assert_async",
        "sym_constrain_range",
        "_assert_scalar",
    }
)
"""What forward may run besides Triton launches: the strict policy's free ops (tools.checks.audit_ops)."""

_REGISTER = torch._C._dispatch_library
"""The C++ library constructor, bound when the harness imports this module (before the guard
wraps it and before the candidate exists)."""


class ComputeRefused(RuntimeError):
    """A PyTorch compute kernel called during forward."""


def is_library(op: str) -> bool:
    """Whether a refused operator ("aten.mm.out", as `compute_blocked` records it) is a library
    GEMM or convolution (`tools.checks.audit_ops.LIBRARY_OPS`: the strict policy's `policy`, the lenient
    policy's "mixed"), not other PyTorch compute."""
    base = op.removeprefix("aten.").split(".")[0]
    return base in LIBRARY_OPS or base.rstrip("_") in LIBRARY_OPS


def blocked_operators(key: str, allow_library: bool = False) -> list[str]:
    """The aten operators (with overload) whose `key` kernel computes: names as the library
    handle takes them ("relu", "add.Tensor")."""
    exempt = EXEMPT | (LIBRARY_OPS if allow_library else frozenset())
    out = []
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        name = full[len("aten::") :]
        base = name.split(".")[0]
        if base in exempt or base.rstrip("_") in exempt:
            continue
        try:
            if not torch._C._dispatch_has_kernel_for_dispatch_key(full, key):
                continue  # composite: it decomposes into operators that are blocked
        except Exception:  # noqa: BLE001 - an operator the dispatcher cannot answer for
            continue
        out.append(name)
    return out


@contextlib.contextmanager
def compute_blocked(operators: list[str], key: str) -> Iterator[list[str]]:
    """Within the block, every operator of `operators` raises `ComputeRefused` at `key` (all
    levels of dispatch end there); yields the list of those called (the evidence)."""
    called: list[str] = []

    def refuse(name: str):
        def kernel(*args: object, **kwargs: object) -> object:
            called.append(f"aten.{name}")
            raise ComputeRefused(
                f"PyTorch compute refused in forward: aten.{name} (reached below the audit: "
                "all compute must happen in Triton kernels)"
            )

        return kernel

    import warnings

    handle = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        try:
            handle = _REGISTER("IMPL", "aten", "", __file__, 0)
            for name in operators:
                try:
                    handle.impl(name, key, refuse(name), False)
                except Exception:  # noqa: BLE001 - an operator that takes no Python kernel
                    continue
        except Exception:
            if handle is not None:
                handle.reset()
            raise
    try:
        yield called
    finally:
        handle.reset()
