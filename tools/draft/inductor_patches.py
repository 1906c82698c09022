"""The patches of Inductor (and Triton) in force while the drafter runs it: the stand-in driver
(CPU path), the choice filter for GEMMs and convolutions, the conv bias peeled off (CPU path),
average pooling kept in Triton, negative powers in the value-range analysis unbounded. Each is a
context manager or a wrapper, undone afterwards."""

from __future__ import annotations

import contextlib
import unittest.mock
from collections.abc import Iterator
from typing import Any


class _StandInDriver:
    """A Triton driver that only answers 'which target?' (CUDA sm_90) — nothing compiles or runs.

    Inductor's Triton codegen asks the active driver for a target (for a cache key and for
    backend options) even when the code will never be compiled; with no GPU, Triton has no active
    driver at all, so this stands in. Installed only when no real driver is active.
    """

    def __init__(self) -> None:
        from triton.backends.compiler import GPUTarget

        self._target = GPUTarget("cuda", 90, 32)

    @classmethod
    def is_active(cls) -> bool:
        return True

    def get_current_target(self) -> Any:
        return self._target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_benchmarker(self) -> Any:
        raise RuntimeError("the stand-in Triton driver cannot benchmark (no GPU)")

    def map_python_to_cpp_type(self, ty: str) -> str:
        raise RuntimeError("the stand-in Triton driver cannot build launchers (no GPU)")


@contextlib.contextmanager
def stand_in_driver_if_needed() -> Iterator[bool]:
    from triton.runtime.driver import driver

    try:
        driver.active.get_current_target()
        yield False
        return
    except Exception:
        pass
    previous = getattr(driver, "_active", None)
    driver.set_active(_StandInDriver())
    try:
        yield True
    finally:
        if hasattr(driver, "_active"):
            driver._active = previous


def choices_kept(original: Any, first_only: bool, conv_templates: bool = False) -> Any:
    """Wrap AlgorithmSelectorCache.__call__ to choose which implementations Inductor may pick.

    GEMMs (`mm`, `addmm`, `bmm`, `baddbmm`) keep only the library choice, so the wrapper calls
    `extern_kernels.<op>`, which the rewriter replaces with this project's GEMM template
    (`tools.kernels.gemm_template`: tf32x3, split-K, tunable at the call site); Inductor's own fp32 GEMM
    templates ran at ~0.5x of cuBLAS on the H200 (issue 15). Convolutions too keep the library
    choice, which the rewriter replaces with this project's convolution (`tools.kernels.triton_conv`):
    Inductor's Triton conv template ran at 0.07x-0.15x of cuDNN on KernelBench's 2D convolutions
    and at 0.004x-0.2x on depthwise ones (248 ms against cuDNN's 3.4 ms on level1/86, H200),
    where this project's runs at 1.1x-2.8x of cuDNN's fp32 (session 6, conv_tune.md). Everything
    else keeps only Triton template choices: all of them on the GPU (Inductor benchmarks them),
    the first on the CPU path (with a single choice Inductor skips benchmarking, which needs a
    GPU). Falls back to the first choice when none of the wanted kind applies.
    `conv_templates` (the `inductor_conv` settings): convolutions keep Inductor's Triton
    templates instead, which fuse the pointwise epilogue into the conv (on the H200 they beat
    this project's kernel plus Inductor's separate epilogue on some level-2 Conv3d fusions:
    level2/7 10.5 ms against 17.5 ms, session 8); the loop drafts it as an alternative.
    """
    from torch._inductor.select_algorithm import ExternKernelCaller, TritonTemplateCaller

    from tools.kernels.gemm_template import GEMM_OPS

    def select(self: Any, name: str, choices: list[Any], *args: Any, **kwargs: Any) -> Any:
        if name == "convolution" and conv_templates:
            kept = [c for c in choices if isinstance(c, TritonTemplateCaller)]
            kept = kept[:1] if first_only else kept
        elif name in GEMM_OPS or name == "convolution":
            kept = [c for c in choices if isinstance(c, ExternKernelCaller)][:1]
        else:
            kept = [c for c in choices if isinstance(c, TritonTemplateCaller)]
            kept = kept[:1] if first_only else kept
        return original(self, name, kept or choices[:1], *args, **kwargs)

    return select


@contextlib.contextmanager
def conv_bias_peeled() -> Iterator[None]:
    """Make Inductor add a convolution's bias after the conv on CPU too (CPU path only).

    Inductor's conv lowering peels the bias off into a separate add only when the device is not
    "cpu" (CPU convs normally go to mkldnn, which takes the bias); its Triton conv templates have
    no bias input, so with `cpu_backend="triton"` the bias was silently dropped (torch 2.13).
    """
    import torch
    from torch._inductor import lowering

    aten = torch.ops.aten
    original = lowering.lowerings.get(aten.convolution.default)
    if original is None:
        yield
        return

    def convolution(x: Any, weight: Any, bias: Any, *args: Any, **kwargs: Any) -> Any:
        if bias is None:
            return original(x, weight, bias, *args, **kwargs)
        result = original(x, weight, None, *args, **kwargs)
        channels = result.get_size()[1]
        spatial = len(result.get_size()) - 2
        bias_view = lowering.lowerings[aten.view.default](bias, [channels] + [1] * spatial)
        return lowering.lowerings[aten.add.Tensor](result, bias_view)

    patched = {
        k: convolution
        for k in (aten.convolution, aten.convolution.default)
        if k in lowering.lowerings
    }
    with unittest.mock.patch.dict(lowering.lowerings, patched):
        yield


class _NeverUnequal:
    """`sympy` as `torch._inductor.lowering` sees it, except that `Ne(a, b)` is false."""

    def __getattr__(self, name: str) -> Any:
        import sympy

        if name == "Ne":
            return lambda *args: sympy.false
        return getattr(sympy, name)


@contextlib.contextmanager
def avg_pool_in_triton() -> Iterator[None]:
    """Lower every average pooling with Inductor's own Triton reduction.

    Inductor hands `avg_pool{1,2,3}d` back to ATen (no Triton) when the window holds more than
    25 elements and the stride differs from the kernel, a speed heuristic of its own; the draft
    then had no kernel at all (KernelBench level1/46: a 3x3x3 window, stride 2). Inside those
    lowerings the test `Ne(kernel, stride)` reads false, so the same reduction that Inductor
    uses for kernel == stride (any window size) lowers the pooling.
    """
    import torch
    from torch._inductor import lowering

    aten = torch.ops.aten
    patched = {}
    for packet in (aten.avg_pool1d, aten.avg_pool2d, aten.avg_pool3d):
        original = lowering.lowerings.get(packet.default)
        if original is None:
            continue

        def pool(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with unittest.mock.patch.object(lowering, "sympy", _NeverUnequal()):
                return _original(*args, **kwargs)

        patched.update({packet: pool, packet.default: pool})
    with unittest.mock.patch.dict(lowering.lowerings, patched):
        yield


@contextlib.contextmanager
def max_pool1d_as_2d() -> Iterator[None]:
    """Trace `max_pool1d` as `max_pool2d` over a unit height.

    ATen's `max_pool1d` is a C++ composite that reads the input's length as a plain integer, so
    a dynamic draft had its length fixed (`x.shape[2] == 32`; KernelBench level1/41 failed the
    generalisation check). `max_pool2d` has a symbolic shape function; the values are the same.
    """
    import torch
    from torch.nn.modules.utils import _single

    def max_pool1d(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: ANN001, ANN202
        kernel = _single(kernel_size)
        steps = _single(stride) if stride is not None and _single(stride) else kernel
        pool = torch.max_pool2d(
            x.unsqueeze(-2),
            (1, kernel[0]),
            (1, steps[0]),
            (0, _single(padding)[0]),
            (1, _single(dilation)[0]),
            ceil_mode,
        )
        return pool.squeeze(-2)

    with unittest.mock.patch.object(torch, "max_pool1d", max_pool1d):
        yield


@contextlib.contextmanager
def group_norm_with_symbolic_groups() -> Iterator[None]:
    """Trace `F.group_norm` as a reshape to (N, groups, -1), `var_mean` and the affine step.

    ATen's `native_group_norm` takes the group count as a plain `int`, so a dynamic draft had
    `self.gn.num_groups == 8` fixed (KernelBench level1/35 failed the generalisation check at 4
    groups). Traced through this composite the count stays symbolic (dynamo reads it from the
    module); the same statistics (biased variance over each group's channels and positions),
    and the reference's rule that the groups divide the channels, as a runtime check.
    """
    import torch
    import torch.nn.functional as F

    def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: ANN001, ANN202
        n, c = x.shape[0], x.shape[1]
        torch._check(c % num_groups == 0, lambda: "the groups must divide the channels")
        grouped = x.reshape(n, num_groups, -1)
        var, mean = torch.var_mean(grouped, dim=-1, correction=0, keepdim=True)
        y = ((grouped - mean) * torch.rsqrt(var + eps)).reshape(x.shape)
        affine = (1, c) + (1,) * (x.dim() - 2)
        if weight is not None:
            y = y * weight.reshape(affine)
        if bias is not None:
            y = y + bias.reshape(affine)
        return y

    with unittest.mock.patch.object(F, "group_norm", group_norm):
        yield


@contextlib.contextmanager
def attention_as_math() -> Iterator[None]:
    """Trace `scaled_dot_product_attention` through its math composite (bmm, softmax, bmm).

    The dispatcher otherwise picks a fused attention kernel of ATen (flash, memory-efficient,
    cuDNN; on the CPU `_scaled_dot_product_flash_attention_for_cpu`), which Inductor keeps as an
    extern call: the draft then had no Triton kernel at all (KernelBench level1/97). With only
    the math backend enabled while dynamo traces, the graph holds GEMMs and a softmax that
    Inductor lowers to Triton like any other.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        yield


@contextlib.contextmanager
def warnings_outside_graph() -> Iterator[None]:
    """Let dynamo move `warnings.warn` and `print` calls out of the traced graph.

    A module that warns in forward (InstanceNorm on an input whose channels differ from
    `num_features`, KernelBench level2/28) otherwise stops `fullgraph=True` tracing with
    "Attempted to call function marked as skipped"; the warning changes nothing computed.
    """
    import builtins
    import warnings

    import torch

    config = torch._dynamo.config
    if not hasattr(config, "reorderable_logging_functions"):
        yield
        return
    kept = set(config.reorderable_logging_functions) | {warnings.warn, builtins.print}
    with config.patch(reorderable_logging_functions=kept):
        yield


_NEGATIVE_EXPONENT = "Exponent must be non-negative."


@contextlib.contextmanager
def negative_powers_unbounded() -> Iterator[None]:
    """A power of negative exponent in the value-range analysis: no bounds, not an error.

    torch 2.13's `SymPyValueRangeAnalysis.pow_by_natural` raises on a constant negative
    exponent, which the shape environment meets while Inductor checks a stride order it has
    written as a quotient of sizes (KernelBench level3/7 at 32x32, a convolution after an
    Inception module's concatenation: "LoweringException: ValueError: Exponent must be
    non-negative.", so the dynamic draft failed). Unknown bounds make the check undecided,
    which Inductor already handles (`guard_or_false`: a layout copy at worst).
    """
    try:
        from torch.utils._sympy.value_ranges import SymPyValueRangeAnalysis, ValueRanges
    except ImportError:
        yield
        return
    original = SymPyValueRangeAnalysis.__dict__.get("pow_by_natural")
    if not isinstance(original, classmethod):
        yield
        return

    def pow_by_natural(cls: Any, a: Any, b: Any) -> Any:
        try:
            return original.__func__(cls, a, b)
        except ValueError as exc:
            if str(exc) != _NEGATIVE_EXPONENT:
                raise
            return ValueRanges.unknown_int()

    with unittest.mock.patch.object(
        SymPyValueRangeAnalysis, "pow_by_natural", classmethod(pow_by_natural)
    ):
        yield
