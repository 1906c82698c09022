"""The host side: Inductor's `call(args)` rewritten (an `ast` transformer) as plain torch
(allocations, views) and Triton launches; library GEMMs become this project's template, library
convolutions its Triton convolution (issue 15)."""

from __future__ import annotations

import ast
import re
from typing import Any

from tools.core import pyast
from tools.core.problem_dtype import job_precision
from tools.draft.grids import launch_grid
from tools.draft.kernels import Kernel, kernel_params
from tools.draft.result import DraftUnsupportedError
from tools.kernels.gemm_template import GEMM_OPS
from tools.kernels.gemm_template import call_for as gemm_call_for
from tools.kernels.gemm_template import config_for as gemm_config_for

_DROPPED_CALLS = {
    "assert_size_stride", "assert_alignment", "get_raw_stream", "check_nan", "run_intermediate_hooks",
}  # fmt: skip
_ALLOCATORS = re.compile(r"^empty_strided_(cpu|cuda|xpu|mtia)(_pinned)?$")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


class HostRewriter(ast.NodeTransformer):
    def __init__(
        self, kernels: dict[str, Kernel], grids: dict[int, ast.expr], scalars: set[str]
    ) -> None:
        self.kernels = kernels
        self.grids = grids  # id(ast.Call of `.run`) -> grid
        self.scalars = scalars  # `call`'s names of Python numbers (`arg5_1.item()` -> `arg5_1`)
        self.items_read = 0
        self.gemms: list[str] = []  # extern GEMMs replaced by the project's template, in order
        self.library_calls: list[str] = []
        self.launched: list[str] = []
        self.uses_reinterpret = False

    # Statements: drop asserts/streams/device guards, splice `with torch.cuda._DeviceGuard(...)`.
    def visit_With(self, node: ast.With) -> Any:
        self.generic_visit(node)
        if len(node.items) == 1 and "DeviceGuard" in _dotted(
            getattr(node.items[0].context_expr, "func", node)
        ):
            return node.body
        return node

    def visit_Expr(self, node: ast.Expr) -> Any:
        if isinstance(node.value, ast.Call):
            name = _dotted(node.value.func)
            if name.split(".")[-1] in _DROPPED_CALLS or name in {
                "args.clear",
                "torch.cuda.set_device",
            }:
                return None
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        if (
            isinstance(node.value, ast.Call)
            and _dotted(node.value.func).split(".")[-1] in _DROPPED_CALLS
        ):
            return None
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        name = _dotted(node.func)
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "item"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in self.scalars
            and not node.args
        ):
            self.items_read += 1
            return node.func.value
        if _ALLOCATORS.match(name):
            size, stride, dtype = node.args[:3]
            return ast.Call(
                func=ast.Attribute(ast.Name("torch", ast.Load()), "empty_strided", ast.Load()),
                args=[size, stride],
                keywords=[
                    ast.keyword("dtype", dtype),
                    ast.keyword("device", ast.Name("device", ast.Load())),
                ],
            )
        if name == "reinterpret_tensor":
            self.uses_reinterpret = True
            node.func = ast.Name("reinterpret_tensor", ast.Load())
            return node
        if isinstance(node.func, ast.Attribute) and node.func.attr == "run":
            kernel = _dotted(node.func.value)
            if kernel in self.kernels:
                return self._launch(self.kernels[kernel], node)
        if name.startswith("extern_kernels.") and name.split(".", 1)[1] in GEMM_OPS:
            op = name.split(".", 1)[1]
            self.gemms.append(op)
            args = [ast.unparse(a) for a in node.args]
            kwargs = {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}
            # bf16/fp16 drafts start from a tile for 2-byte operands (`config_for`)
            config = gemm_config_for(job_precision())
            return pyast.parse(gemm_call_for(op, args, kwargs, config), mode="eval").body
        if name.startswith("extern_kernels."):
            op = name.split(".", 1)[1]
            self.library_calls.append(op)
            import torch

            target = f"torch.{op}" if hasattr(torch, op) else f"torch.ops.aten.{op}"
            node.func = pyast.parse(target, mode="eval").body
            return node
        if name.startswith(("aten.", "torch.ops.aten.")):
            op = name.split("aten.", 1)[1]
            self.library_calls.append(f"aten.{op}")
            node.func = pyast.parse(f"torch.ops.aten.{op}", mode="eval").body
            return node
        return node

    def _launch(self, kernel: Kernel, node: ast.Call) -> ast.Call:
        self.launched.append(kernel.name)
        runtime_args, constexprs = kernel_params(kernel)
        args = node.args[: len(runtime_args)]
        config = kernel.config
        keywords = [
            ast.keyword(k, ast.Constant(v)) for k, v in config.kwargs.items() if k in constexprs
        ]
        missing = [c for c in constexprs if c not in config.kwargs]
        if missing:
            raise DraftUnsupportedError(
                f"kernel {kernel.name}: no value for constexpr {', '.join(missing)}"
            )
        for size in kernel.divisors:  # constexpr copies of the sizes it divides by
            if size in runtime_args and runtime_args.index(size) < len(args):
                keywords.append(ast.keyword(f"KS{size[2:]}", args[runtime_args.index(size)]))
            else:
                raise DraftUnsupportedError(f"kernel {kernel.name}: no launch argument for {size}")
        keywords.append(ast.keyword("num_warps", ast.Constant(config.num_warps)))
        keywords.append(ast.keyword("num_stages", ast.Constant(config.num_stages)))
        grid = self.grids[id(node)]
        return ast.Call(
            func=ast.Subscript(ast.Name(kernel.name, ast.Load()), grid, ast.Load()),
            args=args,
            keywords=keywords,
        )


def _find_call(tree: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise DraftUnsupportedError("Inductor's wrapper has no `call` function")


def rewrite_host(
    wrapper: str,
    kernels: dict[str, Kernel],
    static: bool,
    scalars: set[int],
    first_tensor: int = 0,
) -> tuple[ast.FunctionDef, HostRewriter, int]:
    """`call` as plain torch + Triton launches. `scalars`: positions in `args` of Python numbers
    Inductor took as 0-d tensors (a float attribute such as `self.eps`, read with `.item()`);
    `first_tensor`: the position of the first tensor (a dynamic draft's first are sizes)."""
    tree = pyast.parse(wrapper)
    call = _find_call(tree)
    # Parameters: `call(args)` (older) or `Runner.call(self, args)`.
    call.args.args = [a for a in call.args.args if a.arg != "self"]
    call.decorator_list = []
    grids = {}
    for node in ast.walk(call):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
        ):
            kernel = kernels.get(_dotted(node.func.value))
            if kernel is not None:
                grids[id(node)] = launch_grid(kernel, node, static)
    names = _unpacked_names(call)
    rewriter = HostRewriter(kernels, grids, {names[i] for i in scalars if i < len(names)})
    call = rewriter.visit(call)
    leftover = [
        n.id
        for n in ast.walk(call)
        if isinstance(n, ast.Name) and n.id in rewriter.scalars and isinstance(n.ctx, ast.Load)
    ]
    if len(leftover) > rewriter.items_read:
        raise DraftUnsupportedError(
            "a Python number Inductor took as a tensor is used other than through .item()"
        )
    n_args = _unpacked_arg_count(call)
    first_arg = names[first_tensor] if first_tensor < len(names) else None
    if first_arg is not None:
        # Buffers go on the device of the inputs (Inductor wrote `empty_strided_cpu/cuda`).
        unpack_index = next(i for i, s in enumerate(call.body) if _is_args_unpack(s))
        device_stmt = pyast.parse(f"device = {first_arg}.device").body[0]
        call.body.insert(unpack_index + 1, device_stmt)
    ast.fix_missing_locations(call)
    return call, rewriter, n_args


def _is_args_unpack(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Name)
        and stmt.value.id == "args"
    )


def _unpacked_names(call: ast.FunctionDef) -> list[str]:
    for stmt in call.body:
        if _is_args_unpack(stmt):
            target = stmt.targets[0]
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            return [e.id for e in elts if isinstance(e, ast.Name)]
    return []


def _unpacked_arg_count(call: ast.FunctionDef) -> int:
    return len(_unpacked_names(call))


def returned_count(call: ast.FunctionDef) -> int:
    returns = [n for n in ast.walk(call) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1 or not isinstance(returns[0].value, (ast.Tuple, ast.List)):
        raise DraftUnsupportedError("Inductor's `call` does not end in one `return (outputs...)`")
    return len(returns[0].value.elts)


# --------------------------------------------------------------------------------------------
# Hook (issue 15): library convolutions become this project's Triton convolution
# (tools/kernels/triton_conv.py), copied into the candidate (`assemble.with_conv_source`). Two call sites
# in `steps.one_draft`.

_CONV_TARGETS = {
    "torch.convolution": "convolution",
    "torch.ops.aten.convolution": "aten.convolution",
    "torch.ops.aten.convolution.default": "aten.convolution.default",
}


def convolutions_in_triton(call: ast.FunctionDef, host: HostRewriter) -> str:
    """Point the host code's library convolutions (`extern_kernels.convolution`, rewritten to
    `torch.convolution` by `HostRewriter`, or an `aten.convolution` fallback) at
    `triton_convolution`, which has the same signature and takes every size from its tensors.
    Returns the kernels' source for the candidate ("" when the host code has no convolution)."""
    from tools.kernels import triton_conv

    replaced = set()
    for node in ast.walk(call):
        if isinstance(node, ast.Call) and _dotted(node.func) in _CONV_TARGETS:
            replaced.add(_CONV_TARGETS[_dotted(node.func)])
            node.func = ast.Name("triton_convolution", ast.Load())
            _groups_from_shapes(node)
    if not replaced:
        return ""
    host.library_calls[:] = [c for c in host.library_calls if c not in replaced]
    return triton_conv.candidate_source(job_precision())  # bf16/fp16: their tiles


_CONV_PARAMS = (
    "input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding",
    "groups",
)  # fmt: skip


def _groups_from_shapes(node: ast.Call) -> None:
    """A forward convolution's `groups=8` as `groups=x.shape[1] // w.shape[1]` (its input
    channels over the weight's channels a group: equal for every valid call). ATen's
    `convolution` takes the group count as a plain int, so Inductor writes the traced value even
    where it follows a size: a depthwise conv's `groups=in_channels` (level1/82: the dynamic
    draft ran 5 channels in 8 groups). Transposed convolutions keep theirs (their weight's shape
    holds the output channels a group, not the count)."""
    given = dict(zip(_CONV_PARAMS, node.args, strict=False))
    given.update({k.arg: k.value for k in node.keywords if k.arg})
    x, w, groups = given.get("input"), given.get("weight"), given.get("groups")
    transposed = given.get("transposed")
    if not (
        isinstance(x, ast.Name)
        and isinstance(w, ast.Name)
        and isinstance(groups, ast.Constant)
        and isinstance(transposed, ast.Constant)
        and transposed.value is False
    ):
        return
    per_group = pyast.parse(f"{x.id}.shape[1] // {w.id}.shape[1]", mode="eval").body
    for i, arg in enumerate(node.args):
        if arg is groups:
            node.args[i] = per_group
    for k in node.keywords:
        if k.value is groups:
            k.value = per_group


# --------------------------------------------------------------------------------------------
# Hook (issue 33): the recurrent layers' custom ops (tools/draft/recurrent.py) become this
# project's Triton launchers (tools/kernels/recurrent_kernels.py), copied into the candidate
# (`assemble.with_source_before_call`). Called in `steps.one_draft` beside the convolution hook.


def recurrent_in_triton(call: ast.FunctionDef) -> str:
    """Point the host code's `torch.ops.tagent.<lstm|gru|rnn>[.default](...)` calls at
    `triton_lstm` & co., which take the same arguments. Returns the launchers' source for the
    candidate ("" when the host code has no recurrent layer)."""
    from tools.draft.recurrent import OPS
    from tools.kernels import recurrent_kernels

    targets = {}
    for op, launcher in OPS.items():
        targets[f"torch.ops.tagent.{op}"] = targets[f"torch.ops.tagent.{op}.default"] = launcher
    replaced = False
    for node in ast.walk(call):
        if isinstance(node, ast.Call) and _dotted(node.func) in targets:
            node.func = ast.Name(targets[_dotted(node.func)], ast.Load())
            replaced = True
    return recurrent_kernels.candidate_source() if replaced else ""


# --------------------------------------------------------------------------------------------
# Hook (issue 33): attention's custom op (tools/draft/attention.py) becomes this project's fused
# Triton kernel (tools/kernels/attention_kernels.py), copied into the candidate
# (`assemble.with_source_before_call`). Called in `steps.one_draft` beside the recurrent hook.


def attention_in_triton(call: ast.FunctionDef) -> str:
    """Point the host code's `torch.ops.tagent.attention[.default](...)` calls at
    `triton_attention`, which takes the same arguments. Returns the kernel's source for the
    candidate ("" when the host code has no attention)."""
    from tools.draft.attention import OP
    from tools.kernels import attention_kernels

    targets = {"torch.ops.tagent.attention", "torch.ops.tagent.attention.default"}
    replaced = False
    for node in ast.walk(call):
        if isinstance(node, ast.Call) and _dotted(node.func) in targets:
            node.func = ast.Name(OP, ast.Load())
            replaced = True
    return attention_kernels.candidate_source() if replaced else ""
