"""Running Inductor on the problem's Model and capturing the Python wrapper it generates, with
what a dynamic draft needs: where each graph input comes from, the traced shapes, the guards."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import unittest.mock
from typing import Any

from tools.core import pyast
from tools.draft.inductor_patches import (
    attention_as_math,
    avg_pool_in_triton,
    choices_kept,
    conv_bias_peeled,
    group_norm_with_symbolic_groups,
    max_pool1d_as_2d,
    negative_powers_unbounded,
    stand_in_driver_if_needed,
    warnings_outside_graph,
)
from tools.draft.loading import LoadedProblem
from tools.draft.result import DraftUnsupportedError
from tools.draft.scan_precision import exponents_in_fp64_pass
from tools.draft.settings import existing_options, inductor_options


class _WrapperCaptured(Exception):
    """Raised from inside Inductor once the wrapper source exists (CPU path: stop there)."""


@dataclasses.dataclass
class Capture:
    wrapper: str
    graph_inputs: list[Any]
    module: Any  # the compiled wrapper module (GPU path only)
    input_sources: list[str | None] = dataclasses.field(default_factory=list)
    """Dynamo's source of each graph input (`L['x'].size()[0]`, `L['self'].eps`), or None."""
    input_shapes: list[tuple[Any, ...] | None] = dataclasses.field(default_factory=list)
    """Each tensor graph input's traced shape: ints where Inductor fixed a size, else symbols."""
    guards: list[str] = dataclasses.field(default_factory=list)
    """What a dynamic draft assumes about sizes (the shape environment's guards)."""
    symbol_sources: dict[str, str] = dataclasses.field(default_factory=dict)
    """Size symbols (`s27`) as Python inside `forward` (`x.shape[1]`)."""
    scan_exponents: int = 0
    """`exp`s of cumulative sums computed in fp64 (tools/draft/scan_precision.py)."""
    fixed_parameters: int = 0
    """Parameters and buffers whose shapes a dynamic draft kept at the problem's (a model with
    more than `SYMBOLIC_PARAMETERS_MAX`); 0 where they are symbolic, or the draft is static."""


SYMBOLIC_PARAMETERS_MAX = 16
"""Parameters and buffers of a model up to which a dynamic draft gives their shapes symbols
too (they follow the constructor's arguments); past it they are the problem's. The shape
environment's work grows faster than the symbols (issue 33, benchmarks/results/cpu/depth_scaling:
N conv-bn blocks, 6 tensors a block, drafted on the CPU: at N=8 Inductor took 34.7 CPU s with
symbolic parameter shapes, 18.9 of them in `ShapeEnv.evaluate_expr`, against 12.2 s (0.2 s)
with fixed ones; 12.2 s at N=8, 19.1 s at N=16 fixed). Level-1 and level-2 models have a few
tensors; a level-3 network has tens to hundreds."""


def parameter_shapes_symbolic(model: Any) -> bool:
    """Whether a dynamic draft of `model` gives its parameters' and buffers' shapes symbols:
    only for a model with at most `SYMBOLIC_PARAMETERS_MAX` of them."""
    return count_state_tensors(model) <= SYMBOLIC_PARAMETERS_MAX


def count_state_tensors(model: Any) -> int:
    """Parameters and buffers of `model`, each tensor once."""
    seen = {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
    return len(seen)


def capture_inductor(
    problem: LoadedProblem, device: str, dynamic: bool = False, settings: str = "default"
) -> Capture:
    """Compile the problem's Model with Inductor (one graph, `dynamic` sizes or the problem's)
    under the drafter's settings and patches (`_config_patches`, `_lowering_patches`) and run
    it once, capturing the wrapper source Inductor generates, the compiled module (GPU), and
    each graph input's source, shape and size symbols (`_capture_hooks`). On the CPU the
    compile stops once the wrapper source exists."""
    import torch
    import torch._dynamo

    stop_at_source = device == "cpu"
    seen, save_output_code, compile_to_module, backend = _capture_hooks(stop_at_source)
    with contextlib.ExitStack() as stack:
        scan_pass = _config_patches(stack, problem, device, dynamic, settings)
        _lowering_patches(stack, settings, stop_at_source, save_output_code, compile_to_module)
        torch._dynamo.reset()
        compiled = torch.compile(problem.model, backend=backend, fullgraph=True, dynamic=dynamic)
        try:
            with torch.no_grad():
                compiled(*problem.inputs)
        except Exception as exc:
            if not (stop_at_source and seen["wrappers"] and _caused_by(exc, _WrapperCaptured)):
                raise DraftUnsupportedError(
                    f"torch.compile failed on this problem: {type(exc).__name__}: {first_line(exc)}"
                ) from exc
        finally:
            torch._dynamo.reset()
    wrappers, graph_inputs, modules = seen["wrappers"], seen["graph_inputs"], seen["modules"]
    if len(wrappers) != 1 or len(graph_inputs) != 1:
        raise DraftUnsupportedError(
            f"expected one Inductor graph, got {len(wrappers)} wrappers for {len(graph_inputs)} graphs"
        )
    guards, symbol_sources = _guards_and_symbols(seen["shape_envs"])
    return Capture(
        wrappers[0],
        graph_inputs[0],
        modules[0] if modules else None,
        seen["sources"],
        seen["shapes"],
        guards,
        symbol_sources,
        scan_pass.rewritten,
        0
        if not dynamic or parameter_shapes_symbolic(problem.model)
        else count_state_tensors(problem.model),
    )


def _capture_hooks(stop_at_source: bool) -> tuple[dict[str, list[Any]], Any, Any, Any]:
    """What Inductor is made to hand over, and the three hooks that collect it: the wrapper
    source (`save_output_code`; raises `_WrapperCaptured` when `stop_at_source`), the compiled
    module (`compile_to_module`), and the backend that records each graph input's source,
    traced shape and size symbols before compiling. Returns (what was seen, the hooks)."""
    import torch
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering

    seen: dict[str, list[Any]] = {
        "wrappers": [],
        "graph_inputs": [],
        "modules": [],
        "sources": [],
        "shapes": [],
        "shape_envs": [],
    }

    def save_output_code(code: str) -> None:
        seen["wrappers"].append(code)
        if stop_at_source:
            raise _WrapperCaptured()

    original_compile_to_module = GraphLowering.compile_to_module

    def compile_to_module(self: Any) -> Any:
        module = original_compile_to_module(self)
        seen["modules"].append(module)
        return module

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        # A restarted analysis (dynamo retracing after tensorifying a Python float failed)
        # calls the backend again for the same graph: only the last call counts.
        for key in ("graph_inputs", "sources", "shapes", "shape_envs"):
            seen[key].clear()
        seen["graph_inputs"].append(list(example_inputs))
        for node in (n for n in gm.graph.nodes if n.op == "placeholder"):
            grapharg = node.meta.get("grapharg")
            source = getattr(grapharg, "source", None)
            seen["sources"].append(source.name if source is not None else None)
            value = node.meta.get("example_value")
            seen["shapes"].append(tuple(value.shape) if isinstance(value, torch.Tensor) else None)
            if isinstance(value, torch.SymInt):
                seen["shape_envs"].append(value.node.shape_env)
            elif isinstance(value, torch.Tensor):
                for size in value.shape:
                    if isinstance(size, torch.SymInt):
                        seen["shape_envs"].append(size.node.shape_env)
        return compile_fx(gm, example_inputs)

    return seen, save_output_code, compile_to_module, backend


def _config_patches(
    stack: contextlib.ExitStack,
    problem: LoadedProblem,
    device: str,
    dynamic: bool,
    settings: str,
) -> Any:
    """Inductor's, FX's and Dynamo's settings for the draft, entered on `stack`. Returns the
    post-grad pass that computes a scan's exponents in fp64 (it counts what it rewrote)."""
    import torch
    import torch._inductor.config as inductor_config

    stack.enter_context(inductor_config.patch(inductor_options(device, settings)))
    # No channels-last copies around convolutions, static or dynamic: `triton_convolution`
    # reads any layout from its tensors, and X_SPLIT makes its own channels-last copy. With
    # symbolic sizes Inductor sized them with the channel counts fixed (level1/55: a (s77, 8,
    # h, w) buffer). With fixed sizes it copied the input and weights channels-last, and the
    # output back after the convolution: the static twins of level1/55, 57 and level2/17, 52
    # (the sized path) timed 1.4-2.0x slower than their dynamic drafts on the H200 (session 12).
    stack.enter_context(
        inductor_config.patch(existing_options(inductor_config, {"layout_optimization": False}))
    )
    # A scan's exponents (exp of differences of cumulative sums: Mamba2) in fp64, rounded
    # to fp32 once: in fp32 they carry most of the error (tools/draft/scan_precision.py).
    scan_pass = exponents_in_fp64_pass()
    stack.enter_context(
        inductor_config.patch(
            existing_options(inductor_config, {"post_grad_custom_pre_pass": scan_pass})
        )
    )
    if dynamic:
        # No duck sizing: two dims that happen to be equal (batch 16, dim 16) stay two sizes.
        import torch.fx.experimental._config as fx_config

        stack.enter_context(fx_config.patch(existing_options(fx_config, {"use_duck_shape": False})))
        # Parameter shapes and modules' int attributes (LayerNorm's normalized_shape)
        # symbolic too: they follow the constructor's arguments.
        symbolic = parameter_shapes_symbolic(problem.model)
        stack.enter_context(
            torch._dynamo.config.patch(
                existing_options(
                    torch._dynamo.config,
                    {
                        "force_parameter_static_shapes": not symbolic,
                        "force_nn_module_property_static_shapes": not symbolic,
                        "allow_unspec_int_on_nn_module": symbolic,
                    },
                )
            )
        )
    return scan_pass


def _lowering_patches(
    stack: contextlib.ExitStack,
    settings: str,
    stop_at_source: bool,
    save_output_code: Any,
    compile_to_module: Any,
) -> None:
    """The hooks into Inductor's lowering (the wrapper source, the compiled module, the
    template choices kept), and the drafter's patches of what Inductor generates
    (`tools.draft.inductor_patches`), entered on `stack`."""
    from torch._inductor.graph import GraphLowering
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    stack.enter_context(
        unittest.mock.patch.object(
            GraphLowering, "save_output_code", staticmethod(save_output_code)
        )
    )
    stack.enter_context(
        unittest.mock.patch.object(GraphLowering, "compile_to_module", compile_to_module)
    )
    stack.enter_context(
        unittest.mock.patch.object(
            AlgorithmSelectorCache,
            "__call__",
            choices_kept(
                AlgorithmSelectorCache.__call__,
                first_only=stop_at_source,
                conv_templates=settings == "inductor_conv",
            ),
        )
    )
    if stop_at_source:
        stack.enter_context(stand_in_driver_if_needed())
        stack.enter_context(conv_bias_peeled())
    stack.enter_context(avg_pool_in_triton())
    stack.enter_context(negative_powers_unbounded())
    stack.enter_context(max_pool1d_as_2d())
    stack.enter_context(group_norm_with_symbolic_groups())
    stack.enter_context(attention_as_math())
    stack.enter_context(warnings_outside_graph())
    stack.enter_context(attention_as_math())
    stack.enter_context(warnings_outside_graph())


def _guards_and_symbols(shape_envs: list[Any]) -> tuple[list[str], dict[str, str]]:
    """A dynamic draft's assumptions about sizes (the shape environment's guards) and its size
    symbols as Python inside `forward` (`s27` -> `x.shape[1]`)."""
    guards, symbol_sources = [], {}
    if shape_envs:
        env = shape_envs[0]
        guards = list(dict.fromkeys(str(g.expr) for g in env.guards))
        for symbol, where in getattr(env, "var_to_sources", {}).items():
            if where:
                with contextlib.suppress(Exception):
                    symbol_sources[str(symbol)] = source_expr(where[0].name)
    return guards, symbol_sources


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def source_expr(source: str) -> str:
    """Dynamo's source of a graph input as Python inside `forward`: `L['x'].size()[0]` ->
    `x.shape[0]`, `L['self'].eps` -> `self.eps`."""
    expr = re.sub(r"\bL\['(\w+)'\]", r"\1", source).replace(".size()", ".shape")
    # self._modules['linear']._parameters['weight'] -> self.linear.weight (identifiers only)
    expr = re.sub(r"\._(?:modules|parameters|buffers)\['([A-Za-z_]\w*)'\]", r".\1", expr)
    try:
        pyast.parse(expr, mode="eval")
    except SyntaxError:
        raise DraftUnsupportedError(f"cannot spell graph input {source!r} in forward") from None
    if "G[" in expr or "L[" in expr:
        raise DraftUnsupportedError(f"graph input {source!r} is not an argument or attribute")
    return expr
