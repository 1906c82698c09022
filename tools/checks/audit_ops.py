"""Which aten ops forward may run besides Triton launches (job-process side): allocations and
views are free, library matmul/conv ops are "library" (allowed only under the `allow-library`
policy), anything else is PyTorch compute. The sets by which the dispatch-mode audits
(`tools.checks.audit_mode`, `tools.checks.constructor_audit`), the compute block and the op
profiler classify.
"""

from __future__ import annotations

ALLOC_OPS = frozenset(
    {
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
)
RNG_OPS = frozenset({"rand", "randn", "randint", "randperm", "random_", "uniform_", "normal_"})
"""Random draws that read no tensor's values (sizes and scalars only): Inductor's wrapper draws
the seeds of `tl.rand` (dropout) with `aten.randint`. Not compute: nothing of the inputs can
flow through them."""
POISON_OPS = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"})
VIEW_OPS = frozenset(
    {
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
)
LIBRARY_OPS = frozenset(
    {
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
)


def op_name(func) -> str:
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
