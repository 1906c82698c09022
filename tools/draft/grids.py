"""Launch grids: Inductor's grid for a launch, written with the launch's own size arguments."""

from __future__ import annotations

import ast
from typing import Any

from tools.core import pyast
from tools.draft.kernels import Kernel, kernel_params
from tools.draft.result import DraftUnsupportedError


def _grid_type(name: str, inductor_meta: dict[str, Any]) -> str:
    """The kernel's grid type; combo-kernel grids (several kernels' programs in one launch) are
    not rewritten."""
    grid_type = inductor_meta.get("grid_type")
    if grid_type in (
        None,
        "ComboKernelGrid",
        "SequentialComboKernelGrid",
        "RoundRobinComboKernelGrid",
    ):
        raise DraftUnsupportedError(f"kernel {name}: grid type {grid_type} is not supported")
    return grid_type


def _constant_args(kernel: Kernel, node: ast.Call) -> dict[str, Any]:
    """The launch's arguments that are constants (sizes such as `xnumel`), by parameter name."""
    runtime_args, _ = kernel_params(kernel)
    extra = list(kernel.autotuner.inductor_meta.get("extra_launcher_args", []))
    return {
        name: arg.value
        for name, arg in zip(runtime_args + extra, node.args, strict=False)
        if isinstance(arg, ast.Constant)
    }


def _grid_for(kernel: Kernel, node: ast.Call) -> tuple[int, ...]:
    """Evaluate Inductor's grid expression for this launch (sizes are static, so it is constant)."""
    from torch._inductor.runtime.triton_heuristics import GridExpr

    inductor_meta = kernel.autotuner.inductor_meta
    values = _constant_args(kernel, node)
    grid_type = _grid_type(kernel.name, inductor_meta)
    try:
        grid = GridExpr.from_meta(inductor_meta, kernel.config)
        x, y, z = grid.eval_slow({**kernel.config.kwargs, **values})
    except Exception as exc:
        raise DraftUnsupportedError(
            f"kernel {kernel.name}: cannot evaluate its {grid_type} grid with static sizes ({exc})"
        ) from exc
    dims = [int(x), int(y), int(z)]
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)


_BLOCK_GRIDS = ("Grid1D", "Grid2D", "Grid3D")


class _Substitute(ast.NodeTransformer):
    """Replace names by expressions (copies, so one expression can appear twice)."""

    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, n: ast.Name) -> ast.AST:
        if n.id in self.values:
            return pyast.parse(ast.unparse(self.values[n.id]), mode="eval").body
        return n


def _prefix_assignments(name: str, prefix: list[str]) -> dict[str, ast.expr]:
    """A grid's prefix lines (`tmp = expr`), each with the earlier ones substituted."""
    temps: dict[str, ast.expr] = {}
    for line in prefix:
        statement = pyast.parse(str(line).strip()).body
        if (
            len(statement) != 1
            or not isinstance(statement[0], ast.Assign)
            or len(statement[0].targets) != 1
            or not isinstance(statement[0].targets[0], ast.Name)
        ):
            raise DraftUnsupportedError(
                f"kernel {name}: its grid prefix {line!r} is not `name = expr`"
            )
        temps[statement[0].targets[0].id] = _Substitute(temps).visit(statement[0].value)
    return temps


def launch_grid(kernel: Kernel, node: ast.Call, static: bool) -> ast.expr:
    """The launch grid, written with the launch's own size arguments.

    Plain 1-3D block grids (`Grid1D/2D/3D`: pointwise and most reductions) become
    `lambda meta: (...)` of the block sizes, so that changing a block size at the launch (the
    tuner does) keeps the grid covering the output (with a literal grid, 2 of 3 tuner variants of
    the ReLU draft were mismatches on the H200: smaller blocks left the tail unwritten). Other
    grids (templates' `FixedGrid`, precomputed ones) become a tuple. Sizes are whatever the
    launch passes: literals in a static draft (`triton.cdiv(13000, meta['XBLOCK'])`), names of
    the host code in a dynamic one (`triton.cdiv(triton_poi_fused_relu_0_xnumel, meta['XBLOCK'])`).
    A static draft's grid is checked against Inductor's own for the chosen config
    (`_checked_static`).
    """
    inductor_meta = kernel.autotuner.inductor_meta
    grid_type = _grid_type(kernel.name, inductor_meta)
    runtime_args, _ = kernel_params(kernel)
    extra = list(inductor_meta.get("extra_launcher_args", []))
    launch_args = dict(zip(runtime_args + extra, node.args, strict=False))
    dims = _grid_dims(kernel, grid_type)

    class _Args(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:
            if n.id in launch_args:
                return pyast.parse(ast.unparse(launch_args[n.id]), mode="eval").body
            return n

    dims = [_Args().visit(d) for d in dims]
    while len(dims) > 1 and isinstance(dims[-1], ast.Constant) and dims[-1].value == 1:
        dims.pop()
    body = ast.Tuple(dims, ast.Load())
    uses_meta = any(isinstance(n, ast.Name) and n.id == "meta" for n in ast.walk(body))
    expr: ast.expr = body
    if uses_meta:
        expr = ast.Lambda(
            args=ast.arguments(
                posonlyargs=[], args=[ast.arg("meta")], kwonlyargs=[], kw_defaults=[], defaults=[]
            ),
            body=body,
        )
    expr = ast.fix_missing_locations(expr)
    if static:
        return _checked_static(kernel, node, expr, uses_meta)
    return expr


def _grid_dims(kernel: Kernel, grid_type: str) -> list[ast.expr]:
    """Inductor's grid (`triton_heuristics.<grid_type>`) generated as Python, the block sizes of
    a plain block grid as `meta[...]` and its prefix lines inlined: the x, y and z dimensions
    as expressions of the launch's parameter names."""
    from torch._inductor.runtime import triton_heuristics

    inductor_meta = kernel.autotuner.inductor_meta
    meta = dict(kernel.config.kwargs)
    if grid_type in _BLOCK_GRIDS:
        meta.update({k: f"meta[{k!r}]" for k in meta if k in ("XBLOCK", "YBLOCK", "ZBLOCK")})
    try:
        grid = getattr(triton_heuristics, grid_type)(inductor_meta=inductor_meta, mode="python")
        # readable in the candidate: triton.cdiv(13000, meta['XBLOCK'])
        grid.ceildiv = lambda numel, block: (
            numel
            if block in (None, 1)
            else -(numel // -block)
            if isinstance(numel, int) and isinstance(block, int)
            else f"triton.cdiv({numel}, {block})"
        )
        grid.generate(meta)
        # A prefix (`y_grid_raw_ = ...` lines: a y dimension split over z past the 65535 limit)
        # is inlined into the dimensions, so the grid stays one expression.
        temps = _prefix_assignments(kernel.name, grid.prefix)
        return [
            _Substitute(temps).visit(pyast.parse(str(g), mode="eval").body)
            for g in (grid.x_grid, grid.y_grid, grid.z_grid)
        ]
    except DraftUnsupportedError:
        raise
    except Exception as exc:
        raise DraftUnsupportedError(
            f"kernel {kernel.name}: cannot write its {grid_type} grid ({type(exc).__name__}: {exc})"
        ) from exc


def _checked_static(kernel: Kernel, node: ast.Call, expr: ast.expr, uses_meta: bool) -> ast.expr:
    """A static draft's grid: `expr` where it evaluates to Inductor's own grid for the chosen
    config and follows the block sizes (`uses_meta`), else Inductor's grid as literals."""
    import triton

    constant = _grid_for(kernel, node)
    free = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)} - {"meta", "triton"}
    try:
        if free:
            raise ValueError(f"free names {sorted(free)}")
        value = eval(
            compile(ast.Expression(expr), "<grid>", "eval"),
            {"__builtins__": {}, "triton": triton},
        )
        value = value(dict(kernel.config.kwargs)) if uses_meta else value
        if tuple(value)[: len(constant)] != tuple(constant):
            raise ValueError(f"{tuple(value)} != Inductor's {constant}")
    except Exception:
        return ast.Tuple([ast.Constant(g) for g in constant], ast.Load())
    if not uses_meta:
        return ast.Tuple([ast.Constant(g) for g in constant], ast.Load())
    return expr
