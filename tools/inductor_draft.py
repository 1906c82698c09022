"""The compiler drafter: a KernelBench problem in, a standalone Triton candidate out.

It runs TorchInductor (`torch.compile(backend="inductor")`) on the problem's `Model`, captures the
Python wrapper Inductor generates, and rewrites it into a candidate file that needs only `torch`
and `triton`: plain `@triton.jit` kernels, a `call(args)` host function that allocates buffers and
launches them with fixed block sizes and grids, and a `ModelNew` whose `forward` reads its
parameters from `self` and calls `call`. KernelLLM's training pairs were made the same way.

Every use of PyTorch internals in the product lives in this module (see
docs/compiler-drafter.md for the list and the versions tested). `check_torch_support()` refuses
torch versions whose internals do not match with a `ShimError` that says what is missing.

Two devices:
- `device="cuda"`: Inductor's own CUDA path, run for real; block sizes are the ones Inductor's
  autotuner picked, GEMMs come from Inductor's Triton templates (autotuned).
- `device="cpu"`: no GPU and no Triton CPU backend. Inductor is told to emit Triton for CPU
  tensors (`cpu_backend="triton"`), a stand-in Triton driver reports a CUDA target so codegen can
  ask for one, and compilation stops as soon as the wrapper source exists (nothing is compiled
  or run). Block sizes are the first config of Inductor's launch heuristics, GEMMs the first
  Triton template choice (no benchmarking), and `libdevice` calls, which the Triton interpreter
  cannot run, are rewritten to `tl` expressions. The result runs under `TRITON_INTERPRET=1`.

`draft_candidate` is meant to run inside a throwaway sandboxed worker: it changes Inductor config
and monkeypatches Inductor for the duration of the call (restored afterwards, so a test can call
it several times in one process).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import linecache
import os
import re
import sys
import tempfile
import textwrap
import types
import unittest.mock
from collections.abc import Iterator
from typing import Any

from tools.errors import ProblemError, ShimError
from tools.gemm_template import GEMM_OPS, GEMM_SOURCE
from tools.gemm_template import call_for as gemm_call_for
from tools.precision import full_fp32

__all__ = [
    "DraftResult",
    "DraftUnsupportedError",
    "MIN_TORCH",
    "TESTED_TORCH",
    "check_torch_support",
    "draft_candidate",
]

MIN_TORCH = (2, 11)
"""Oldest torch whose Inductor internals this shim was written against (the GPU machine's)."""
TESTED_TORCH = ("2.11", "2.13")
"""Minor versions the drafter has been run on (CPU path on 2.13; both paths on 2.11's GPU box)."""

LIBRARY_CALLS_ALLOWED = frozenset({"mm", "addmm", "bmm", "convolution"})
"""Library calls the verifier's allow-library policy accepts (the candidate is then "mixed")."""


class DraftUnsupportedError(ShimError):
    """Inductor produced code this rewriter does not understand (a grid type, a runtime call...)."""


@dataclasses.dataclass
class DraftResult:
    """A drafted candidate and how it was made."""

    source: str
    """The candidate file: `ModelNew` + `@triton.jit` kernels, needing only torch and triton."""
    mixed: bool
    """True when `forward` also calls a library op (only the allow-library policy accepts it)."""
    library_calls: list[str]
    """The library ops `forward` calls (`mm`, `convolution`, `aten.sort`...), in call order."""
    kernels: list[str]
    """Names of the `@triton.jit` kernels launched, in launch order."""
    notes: list[str]
    """What a reader should know: rewrites made for the interpreter, choices made without tuning."""
    dynamic: bool = False
    """True when sizes, strides and Python-number attributes are read at run time."""
    fixed_sizes: list[str] = dataclasses.field(default_factory=list)
    """What still depends on a size: input dimensions Inductor fixed, its guards on sizes."""
    precision: str | None = None
    """`tl.dot` input precision of the GEMMs (`tf32x3`), None when there is no GEMM template."""
    settings: str = "default"
    """The Inductor settings drafted with (`SETTINGS`)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------------------------
# Version check: the names this module reaches into, probed up front.


def _torch_version() -> tuple[int, int]:
    import torch

    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    if not match:
        raise ShimError(f"cannot parse torch version {torch.__version__!r}")
    return int(match.group(1)), int(match.group(2))


def check_torch_support() -> list[str]:
    """Raise `ShimError` unless this torch's Inductor internals are the ones the drafter uses.

    Returns notes (e.g. "torch 2.14 is newer than any version tested").
    """
    import torch

    version = _torch_version()
    if version < MIN_TORCH:
        raise ShimError(
            f"the Inductor drafter needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} "
            f"(tested on {', '.join(TESTED_TORCH)}); this is torch {torch.__version__}, whose "
            "Inductor internals (wrapper layout, launch heuristics, GridExpr) differ"
        )
    missing = []
    probes = {
        "torch._inductor.config": [
            "cpu_backend",
            "max_autotune_gemm",
            "max_autotune_gemm_backends",
        ],
        "torch._inductor.graph": ["GraphLowering"],
        "torch._inductor.compile_fx": ["compile_fx"],
        "torch._inductor.select_algorithm": [
            "AlgorithmSelectorCache",
            "TritonTemplateCaller",
            "ExternKernelCaller",
        ],
        "torch._inductor.runtime.triton_heuristics": ["CachingAutotuner", "GridExpr"],
        "torch._inductor.runtime.triton_helpers": ["maximum", "max2"],
    }
    import importlib

    for module_name, names in probes.items():
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # an ImportError or anything the import itself raises
            missing.append(f"{module_name} ({type(exc).__name__}: {exc})")
            continue
        missing += [f"{module_name}.{n}" for n in names if not hasattr(module, n)]
    from torch._inductor.graph import GraphLowering

    if not hasattr(GraphLowering, "save_output_code"):
        missing.append("GraphLowering.save_output_code")
    if missing:
        raise ShimError(
            f"torch {torch.__version__}: the Inductor internals the drafter uses are missing: "
            + ", ".join(missing)
        )
    notes = []
    tested = {tuple(int(p) for p in v.split(".")) for v in TESTED_TORCH}
    if version not in tested:
        notes.append(
            f"torch {torch.__version__} is not among the versions tested ({', '.join(TESTED_TORCH)})"
        )
    return notes


# --------------------------------------------------------------------------------------------
# The problem: exec it, build the model, find where every tensor Inductor takes as input lives.


@dataclasses.dataclass
class _Problem:
    module: types.ModuleType
    tree: ast.Module
    source: str
    model: Any
    inputs: list[Any]


def _load_problem(source: str, device: str) -> _Problem:
    import torch

    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ProblemError(f"problem source does not parse: {exc}") from exc
    filename = f"<kernelbench-problem-{abs(hash(source)):x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType("kernelbench_problem")
    module.__file__ = filename
    try:
        exec(compile(tree, filename, "exec"), module.__dict__)
    except Exception as exc:
        raise ProblemError(f"problem source fails when run: {type(exc).__name__}: {exc}") from exc
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ProblemError(
                f"problem has no `{name}` (KernelBench format needs Model, get_inputs, get_init_inputs)"
            )
    try:
        model = module.Model(*module.get_init_inputs())
        # Inputs made on the device (a 6.4 GB KernelBench input is not built on the host and
        # copied); the values do not matter to the draft, only shapes, dtypes and layouts.
        with torch.device(device) if device == "cuda" else contextlib.nullcontext():
            inputs = list(module.get_inputs())
    except Exception as exc:
        raise ProblemError(
            f"building Model or its inputs failed: {type(exc).__name__}: {exc}"
        ) from exc
    model = model.to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    return _Problem(module, tree, source, model, inputs)


def _forward_signature(problem: _Problem) -> tuple[ast.arguments, list[str]]:
    """The Model.forward argument list (AST) and the names of its positional parameters."""
    model_cls = _model_classdef(problem.tree)
    for node in model_cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            names = [a.arg for a in node.args.posonlyargs + node.args.args][1:]
            return node.args, names
    raise ProblemError("Model has no `forward` method written in the problem file")


def _model_classdef(tree: ast.Module) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return node
    raise ProblemError("problem has no top-level `class Model`")


def _attribute_expr(path: str, kind: str) -> str:
    """`ln.weight` -> `self.ln.weight`; `net.0.weight` -> `self.get_parameter("net.0.weight")`."""
    parts = path.split(".")
    if all(p.isidentifier() for p in parts):
        return "self." + path
    getter = {"parameter": "get_parameter", "buffer": "get_buffer"}.get(kind)
    if getter is None:
        raise DraftUnsupportedError(f"cannot spell a reference to tensor attribute {path!r}")
    return f"self.{getter}({path!r})"


def _tensor_sources(
    problem: _Problem, forward_args: list[str], vararg: str | None
) -> list[tuple[Any, str]]:
    """(tensor, expression inside ModelNew.forward) for every tensor Inductor may take as input."""
    import torch

    sources: list[tuple[Any, str]] = []
    for i, x in enumerate(problem.inputs):
        if not isinstance(x, torch.Tensor):
            continue
        if i < len(forward_args):
            sources.append((x, forward_args[i]))
        elif vararg:
            sources.append((x, f"{vararg}[{i - len(forward_args)}]"))
    for name, p in problem.model.named_parameters(remove_duplicate=False):
        sources.append((p, _attribute_expr(name, "parameter")))
    for name, b in problem.model.named_buffers(remove_duplicate=False):
        sources.append((b, _attribute_expr(name, "buffer")))
    for mod_name, mod in problem.model.named_modules():
        for attr, value in vars(mod).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                path = f"{mod_name}.{attr}" if mod_name else attr
                sources.append((value, _attribute_expr(path, "attribute")))
    return sources


# --------------------------------------------------------------------------------------------
# Running Inductor and capturing its wrapper.


class _WrapperCaptured(Exception):
    """Raised from inside Inductor once the wrapper source exists (CPU path: stop there)."""


@dataclasses.dataclass
class _Capture:
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
def _stand_in_driver_if_needed() -> Iterator[bool]:
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


def _existing(config_module: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Keep only the config keys this torch has (names move between versions)."""
    kept = {}
    for key, value in options.items():
        owner = config_module
        *parents, leaf = key.split(".")
        try:
            for p in parents:
                owner = getattr(owner, p)
        except AttributeError:
            continue
        if hasattr(owner, leaf):
            kept[key] = value
    return kept


SETTINGS: dict[str, tuple[dict[str, Any], bool, bool, str]] = {
    "default": ({}, False, False, "Inductor's defaults"),
    "static_sizes": (
        {},
        False,
        True,
        "sizes fixed at the problem's: constant index math, persistent reductions where the "
        "row fits (a dynamic draft's symbolic row length rules them out)",
    ),
    "no_split_reductions": (
        {"split_reductions": False},
        False,
        True,
        "one kernel per reduction, no two-pass split of long reductions (sizes fixed)",
    ),
    "no_persistent_reductions": (
        {"triton.persistent_reductions": False},
        False,
        True,
        "looped reductions (R0_BLOCK tiles) instead of one block holding the row (sizes fixed)",
    ),
    "coordinate_descent": (
        {"coordinate_descent_tuning": True},
        True,
        False,
        "launch configs refined by coordinate descent (benchmarks: GPU only)",
    ),
    "max_autotune": (
        {"max_autotune": True, "max_autotune_pointwise": True, "coordinate_descent_tuning": True},
        True,
        False,
        "pointwise and reduction configs autotuned over the full config space (GPU only)",
    ),
}
"""Alternative Inductor settings a draft can be made with: name -> (config, benchmarks (so only
worth drafting on a GPU: on the CPU path nothing is benchmarked and the draft would be the
default one), static sizes (the choice only exists when sizes are known: Inductor neither splits
nor keeps persistent a reduction whose length is symbolic), what it changes). Where eager beats
torch.compile (reductions, pooling, norms), another lowering is worth timing;
`alternative_settings(device)` lists those worth a draft. A static-size draft is correct at the
problem's sizes only (its notes say so; `--generalize` rejects it)."""


def alternative_settings(device: str) -> list[str]:
    """The non-default settings worth drafting on this device (CPU: those that change codegen
    without benchmarking; CUDA: all)."""
    return [
        name
        for name, (_, benchmarks, _, _) in SETTINGS.items()
        if name != "default" and (device == "cuda" or not benchmarks)
    ]


def _inductor_options(device: str, settings: str = "default") -> dict[str, Any]:
    import torch._inductor.config as inductor_config

    if settings not in SETTINGS:
        raise ProblemError(
            f"unknown Inductor settings {settings!r}; choose one of {', '.join(SETTINGS)}"
        )

    options = {
        # Always generate code: a cache hit skips codegen and so the capture.
        "force_disable_caches": True,
        "fx_graph_cache": False,
        "autotune_local_cache": False,
        "autotune_remote_cache": False,
        # Convolutions as Triton templates, not extern library calls; GEMMs as the library
        # choice, which the rewriter replaces with this project's template (`_choices_kept`).
        "max_autotune_gemm": True,
        "max_autotune_gemm_backends": "ATEN,TRITON",
        "max_autotune_pointwise": False,
        # A plain Python wrapper: no C++ wrapper, no CUDA graphs, no graph partitions.
        "cpp_wrapper": False,
        "triton.cudagraphs": False,
        "graph_partition": False,
        "triton.autotune_at_compile_time": False,
        "size_asserts": False,
        "nan_asserts": False,
        "alignment_asserts": False,
        "freezing": False,
        "compile_threads": 1,
        # A kernel per fused group, not one combo kernel for unrelated work.
        "combo_kernels": False,
        "benchmark_kernel": False,
    }
    if device == "cpu":
        options["cpu_backend"] = "triton"
        options["autotune_in_subproc"] = False
    options.update(SETTINGS[settings][0])
    return _existing(inductor_config, options)


def _choices_kept(original: Any, first_only: bool) -> Any:
    """Wrap AlgorithmSelectorCache.__call__ to choose which implementations Inductor may pick.

    GEMMs (`mm`, `addmm`, `bmm`, `baddbmm`) keep only the library choice, so the wrapper calls
    `extern_kernels.<op>`, which the rewriter replaces with this project's GEMM template
    (`tools.gemm_template`: tf32x3, split-K, tunable at the call site); Inductor's own fp32 GEMM
    templates ran at ~0.5x of cuBLAS on the H200 (issue 15). Everything else (convolutions)
    keeps only Triton template choices: all of them on the GPU (Inductor benchmarks them), the
    first on the CPU path (with a single choice Inductor skips benchmarking, which needs a GPU).
    Falls back to the first choice when none of the wanted kind applies.
    """
    from torch._inductor.select_algorithm import ExternKernelCaller, TritonTemplateCaller

    from tools.gemm_template import GEMM_OPS

    def select(self: Any, name: str, choices: list[Any], *args: Any, **kwargs: Any) -> Any:
        if name in GEMM_OPS:
            kept = [c for c in choices if isinstance(c, ExternKernelCaller)][:1]
        else:
            kept = [c for c in choices if isinstance(c, TritonTemplateCaller)]
            kept = kept[:1] if first_only else kept
        return original(self, name, kept or choices[:1], *args, **kwargs)

    return select


@contextlib.contextmanager
def _conv_bias_peeled() -> Iterator[None]:
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
def _avg_pool_in_triton() -> Iterator[None]:
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


def _capture_inductor(
    problem: _Problem, device: str, dynamic: bool = False, settings: str = "default"
) -> _Capture:
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    wrappers: list[str] = []
    graph_inputs: list[list[Any]] = []
    modules: list[Any] = []
    stop_at_source = device == "cpu"

    def save_output_code(code: str) -> None:
        wrappers.append(code)
        if stop_at_source:
            raise _WrapperCaptured()

    original_compile_to_module = GraphLowering.compile_to_module

    def compile_to_module(self: Any) -> Any:
        module = original_compile_to_module(self)
        modules.append(module)
        return module

    sources: list[str | None] = []
    shapes: list[tuple[Any, ...] | None] = []
    shape_envs: list[Any] = []

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        # A restarted analysis (dynamo retracing after tensorifying a Python float failed)
        # calls the backend again for the same graph: only the last call counts.
        for seen in (graph_inputs, sources, shapes, shape_envs):
            seen.clear()
        graph_inputs.append(list(example_inputs))
        for node in (n for n in gm.graph.nodes if n.op == "placeholder"):
            grapharg = node.meta.get("grapharg")
            source = getattr(grapharg, "source", None)
            sources.append(source.name if source is not None else None)
            value = node.meta.get("example_value")
            shapes.append(tuple(value.shape) if isinstance(value, torch.Tensor) else None)
            if isinstance(value, torch.SymInt):
                shape_envs.append(value.node.shape_env)
            elif isinstance(value, torch.Tensor):
                for size in value.shape:
                    if isinstance(size, torch.SymInt):
                        shape_envs.append(size.node.shape_env)
        return compile_fx(gm, example_inputs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(inductor_config.patch(_inductor_options(device, settings)))
        if dynamic:
            # No duck sizing: two dims that happen to be equal (batch 16, dim 16) stay two sizes.
            import torch.fx.experimental._config as fx_config

            stack.enter_context(fx_config.patch(_existing(fx_config, {"use_duck_shape": False})))
            # Parameter shapes and modules' int attributes (LayerNorm's normalized_shape)
            # symbolic too: they follow the constructor's arguments.
            stack.enter_context(
                torch._dynamo.config.patch(
                    _existing(
                        torch._dynamo.config,
                        {
                            "force_parameter_static_shapes": False,
                            "force_nn_module_property_static_shapes": False,
                            "allow_unspec_int_on_nn_module": True,
                        },
                    )
                )
            )
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
                _choices_kept(AlgorithmSelectorCache.__call__, first_only=stop_at_source),
            )
        )
        if stop_at_source:
            stack.enter_context(_stand_in_driver_if_needed())
            stack.enter_context(_conv_bias_peeled())
        stack.enter_context(_avg_pool_in_triton())
        torch._dynamo.reset()
        compiled = torch.compile(problem.model, backend=backend, fullgraph=True, dynamic=dynamic)
        try:
            with torch.no_grad():
                compiled(*problem.inputs)
        except Exception as exc:
            if not (stop_at_source and wrappers and _caused_by(exc, _WrapperCaptured)):
                raise DraftUnsupportedError(
                    f"torch.compile failed on this problem: {type(exc).__name__}: {_first_line(exc)}"
                ) from exc
        finally:
            torch._dynamo.reset()
    if len(wrappers) != 1 or len(graph_inputs) != 1:
        raise DraftUnsupportedError(
            f"expected one Inductor graph, got {len(wrappers)} wrappers for {len(graph_inputs)} graphs"
        )
    guards, symbol_sources = [], {}
    if shape_envs:
        env = shape_envs[0]
        guards = list(dict.fromkeys(str(g.expr) for g in env.guards))
        for symbol, where in getattr(env, "var_to_sources", {}).items():
            if where:
                with contextlib.suppress(Exception):
                    symbol_sources[str(symbol)] = _source_expr(where[0].name)
    return _Capture(
        wrappers[0],
        graph_inputs[0],
        modules[0] if modules else None,
        sources,
        shapes,
        guards,
        symbol_sources,
    )


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, kind):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


# --------------------------------------------------------------------------------------------
# Kernels: load each as Inductor would (to read its launch configs), then rewrite its source.

_KERNEL_DEF = re.compile(
    r"^(?P<name>\w+) = async_compile\.triton\(\s*'(?P=name)',\s*r?'''(?P<src>.*?)'''", re.S | re.M
)


@dataclasses.dataclass
class _Kernel:
    name: str
    inductor_source: str
    autotuner: Any  # CachingAutotuner: .fn (JITFunction), .configs, .triton_meta, .inductor_meta
    config: Any = None  # the triton.Config used for launches
    source: str = ""  # the rewritten plain @triton.jit source


def _load_kernels(wrapper: str, compiled_module: Any, workdir: str) -> dict[str, _Kernel]:
    kernels = {}
    for match in _KERNEL_DEF.finditer(wrapper):
        name, src = match.group("name"), match.group("src")
        autotuner = getattr(compiled_module, name, None) if compiled_module is not None else None
        if autotuner is None:
            path = os.path.join(workdir, f"{name}.py")
            with open(path, "w") as f:
                f.write(src)
            namespace: dict[str, Any] = {"__file__": path, "__name__": f"inductor_kernel_{name}"}
            with warnings_silenced():
                exec(compile(src, path, "exec"), namespace)
            autotuner = namespace[name]
        kernels[name] = _Kernel(name, src, autotuner)
    if "async_compile." in _KERNEL_DEF.sub("", wrapper).replace("async_compile.wait", ""):
        unhandled = re.findall(r"async_compile\.(\w+)\(", wrapper)
        unhandled = sorted(set(unhandled) - {"triton", "wait"})
        if unhandled:
            raise DraftUnsupportedError(
                f"Inductor emitted non-Triton kernels ({', '.join(unhandled)})"
            )
    return kernels


@contextlib.contextmanager
def warnings_silenced() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


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


def _pick_config(kernel: _Kernel) -> tuple[Any, str]:
    """The launch config: the autotuner's pick when it ran (GPU), else the heuristics' first."""
    launchers = getattr(kernel.autotuner, "launchers", None) or []
    if len(launchers) == 1 and getattr(launchers[0], "config", None) is not None:
        return launchers[0].config, "autotuned"
    configs = list(getattr(kernel.autotuner, "configs", None) or [])
    if not configs:
        raise DraftUnsupportedError(f"kernel {kernel.name}: Inductor gave no launch config")
    return configs[0], f"first of {len(configs)} heuristic config(s), not benchmarked"


# libdevice functions the Triton interpreter cannot run, as `tl` calls (same meaning) ...
_LIBDEVICE_AS_TL = {
    "exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2", "sqrt": "tl.sqrt_rn",
    "rsqrt": "tl.rsqrt", "sin": "tl.sin", "cos": "tl.cos", "abs": "tl.abs", "fabs": "tl.abs",
    "floor": "tl.floor", "ceil": "tl.ceil", "erf": "tl.erf", "fma": "tl.fma", "fmin": "tl.minimum",
    "fmax": "tl.maximum", "div_rn": "tl.div_rn", "llabs": "tl.abs",
}  # fmt: skip
# ... or as small @triton.jit helpers emitted into the candidate (name -> body over x / x, y).
_LIBDEVICE_AS_HELPER = {
    "tanh": ("x", "e = tl.exp(-2.0 * tl.abs(x))\n    t = (1.0 - e) / (1.0 + e)\n    return tl.where(x < 0, -t, t)"),
    "sinh": ("x", "return 0.5 * (tl.exp(x) - tl.exp(-x))"),
    "cosh": ("x", "return 0.5 * (tl.exp(x) + tl.exp(-x))"),
    "tan": ("x", "return tl.sin(x) / tl.cos(x)"),
    "expm1": ("x", "return tl.where(tl.abs(x) < 1e-5, x + 0.5 * x * x, tl.exp(x) - 1.0)"),
    "log1p": ("x", "return tl.where(tl.abs(x) < 1e-4, x - 0.5 * x * x, tl.log(1.0 + x))"),
    "trunc": ("x", "return tl.where(x < 0, tl.ceil(x), tl.floor(x))"),
    "nearbyint": ("x", "r = tl.floor(x + 0.5)\n    return tl.where((r - x == 0.5) & (r - 2.0 * tl.floor(r * 0.5) != 0.0), r - 1.0, r)"),
    "rint": ("x", "r = tl.floor(x + 0.5)\n    return tl.where((r - x == 0.5) & (r - 2.0 * tl.floor(r * 0.5) != 0.0), r - 1.0, r)"),
    "isnan": ("x", "return x != x"),
    "isinf": ("x", "return tl.abs(x) == float('inf')"),
    "signbit": ("x", "return x < 0"),
    "asinh": ("x", "return tl.where(x < 0, -1.0, 1.0) * tl.log(tl.abs(x) + tl.sqrt(x * x + 1.0))"),
    "acosh": ("x", "return tl.log(x + tl.sqrt(x * x - 1.0))"),
    "atanh": ("x", "return 0.5 * tl.log((1.0 + x) / (1.0 - x))"),
    "pow": ("x, y", (
        "r = tl.exp2(y * tl.log2(tl.abs(x)))\n"
        "    y_is_int = y == tl.floor(y)\n"
        "    y_is_odd = y_is_int & (y - 2.0 * tl.floor(y * 0.5) == 1.0)\n"
        "    r = tl.where((x < 0) & y_is_odd, -r, r)\n"
        "    r = tl.where((x < 0) & (~y_is_int), float('nan'), r)\n"
        "    return tl.where(y == 0, 1.0, r)"
    )),
}  # fmt: skip


# triton_helpers functions whose Inductor versions reduce through `tl.reduce` with a Triton
# combine function: the interpreter runs that combine per element in Python (softmax 37x1000:
# 61 s, against 2 s with `tl.max`). On the interpreter path they become the `tl` built-ins.
# `tl.max`/`tl.min` do not propagate NaN the way Inductor's helpers do.
_INTERPRETER_HELPERS = {
    "maximum": "def th_maximum(a, b):\n    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "minimum": "def th_minimum(a, b):\n    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)\n",
    "max2": "def th_max2(a, dim):\n    return tl.max(a, dim)\n",
    "min2": "def th_min2(a, dim):\n    return tl.min(a, dim)\n",
}


def _strip_inductor_scaffolding(src: str, name: str) -> str:
    """Drop the imports, `set_driver_to_*()` and `@triton_heuristics.*(...)` decorators."""
    kept = []
    lines = src.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(
            r"(import triton\b|from torch\._inductor|triton_helpers\.set_driver_to_)", line
        ):
            i += 1
            continue
        if line.startswith("@triton_heuristics."):
            depth = 0
            while i < len(lines):  # skip to the line that closes the decorator's parentheses
                depth += lines[i].count("(") - lines[i].count(")")
                i += 1
                if depth <= 0:
                    break
            continue
        kept.append(line)
        i += 1
    body = "\n".join(kept).strip() + "\n"
    if f"def {name}(" not in body:
        raise DraftUnsupportedError(f"kernel {name}: no `def {name}` in Inductor's source")
    if "triton_heuristics" in body:
        raise DraftUnsupportedError(f"kernel {name}: uses triton_heuristics beyond its decorator")
    return body


class _KernelRewriter:
    """Turns Inductor kernel sources into plain `@triton.jit` functions (shared helper set)."""

    def __init__(self, interpreter_safe: bool) -> None:
        self.interpreter_safe = interpreter_safe
        self.helpers: dict[str, str] = {}  # emitted name -> source, in dependency order
        self.notes: list[str] = []
        self.libdevice_kept: set[str] = set()
        self.kernel_locals: dict[str, str] = {}  # helper defs found in kernel sources

    def rewrite(self, kernel: _Kernel) -> str:
        body = _strip_inductor_scaffolding(kernel.inductor_source, kernel.name)
        # Kernel-local helpers (scan combine functions...) are numbered per kernel, so two
        # kernels can both define `_triton_helper_fn_add0`: rename a clashing one.
        for local in re.findall(r"^def (\w+)\(", body, re.M):
            if local == kernel.name:
                continue
            definition = re.search(rf"^def {local}\(.*?(?=^\S|\Z)", body, re.M | re.S).group(0)
            if self.kernel_locals.get(local, definition) != definition:
                renamed = f"{local}_{kernel.name}"
                body = re.sub(rf"(?<![\w.]){local}\b", renamed, body)
                local = renamed
            self.kernel_locals[local] = definition
        if self.interpreter_safe and "(idx_q < " in body:
            # Triton interpreter (3.9) bug: `block_mask & (0-d tensor < n)` gives int32 data
            # that tl.store rejects; a [1, 1] tensor broadcasts correctly.
            body = re.sub(
                r"\(idx_q < (\w+)\)", r"(tl.full([1, 1], 0, tl.int32) + idx_q < \1)", body
            )
        return self._rewrite_calls(body, where=kernel.name).strip() + "\n"

    def _rewrite_calls(self, text: str, where: str) -> str:
        text = re.sub(
            r"(?<![\w.])triton_helpers\.(\w+)", lambda m: self._helper(m.group(1), where), text
        )
        text = re.sub(r"(?<![\w.])tl_math\.(\w+)", lambda m: self._tl_math(m.group(1)), text)
        text = re.sub(
            r"(?<![\w.])libdevice\.(\w+)", lambda m: self._libdevice(m.group(1), where), text
        )
        return text

    def _tl_math(self, name: str) -> str:
        import triton.language as tl

        return f"tl.{name}" if hasattr(tl, name) else f"tl.math.{name}"

    def _libdevice(self, name: str, where: str) -> str:
        if not self.interpreter_safe:
            self.libdevice_kept.add(name)
            return f"libdevice.{name}"
        if name in _LIBDEVICE_AS_TL:
            return _LIBDEVICE_AS_TL[name]
        if name in _LIBDEVICE_AS_HELPER:
            helper = f"libdevice_{name}"
            if helper not in self.helpers:
                params, body = _LIBDEVICE_AS_HELPER[name]
                self.helpers[helper] = f"@triton.jit\ndef {helper}({params}):\n    {body}\n"
                self.notes.append(
                    f"libdevice.{name} (no Triton-interpreter support) rewritten as {helper}, "
                    f"a tl expression; on a GPU, libdevice.{name} is the faster, exact choice"
                )
            return helper
        self.libdevice_kept.add(name)
        return f"libdevice.{name}"

    def _helper(self, name: str, where: str) -> str:
        """Copy torch._inductor.runtime.triton_helpers.<name> (and what it calls) into the file."""
        import triton.language as tl
        from torch._inductor.runtime import triton_helpers
        from triton.runtime.jit import JITFunction

        emitted = f"th_{name}"
        if emitted in self.helpers:
            return emitted
        if self.interpreter_safe and name in _INTERPRETER_HELPERS:
            self.helpers[emitted] = "@triton.jit\n" + _INTERPRETER_HELPERS[name]
            if name in ("max2", "min2"):
                self.notes.append(
                    f"triton_helpers.{name} (a tl.reduce the interpreter runs per element) "
                    f"replaced by tl.{name[:3]}, which does not propagate NaN"
                )
            return emitted
        obj = getattr(triton_helpers, name, None)
        if not isinstance(obj, JITFunction):
            raise DraftUnsupportedError(
                f"{where}: triton_helpers.{name} is not a plain Triton function; cannot inline it"
            )
        src = textwrap.dedent(obj.src)
        src = src[src.index("def ") :]
        # Other triton_helpers globals it uses: JIT functions (copied first) and constexprs.
        module_names = {
            n
            for n in re.findall(r"(?<![\w.])([A-Za-z_]\w*)", src)
            if n != name and hasattr(triton_helpers, n)
        }
        for dep in sorted(module_names):
            value = getattr(triton_helpers, dep)
            if isinstance(value, JITFunction):
                self._helper(dep, where)
                src = re.sub(rf"(?<![\w.]){dep}\b", f"th_{dep}", src)
            elif isinstance(value, tl.constexpr) and isinstance(value.value, (int, float, bool)):
                const = f"th_{dep.lstrip('_')}"
                self.helpers.setdefault(const, f"{const} = tl.constexpr({value.value!r})\n")
                src = re.sub(rf"(?<![\w.]){dep}\b", const, src)
        src = re.sub(rf"^def {name}\(", f"def {emitted}(", src)
        src = re.sub(r"(?<![\w.])math\.(\w+)", lambda m: self._tl_math(m.group(1)), src)
        src = self._rewrite_calls(src, where=f"triton_helpers.{name}")
        self.helpers[emitted] = "@triton.jit\n" + src.rstrip() + "\n"
        return emitted


# --------------------------------------------------------------------------------------------
# The host side: Inductor's `call(args)` as plain torch (allocations, views) + Triton launches.

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


class _HostRewriter(ast.NodeTransformer):
    def __init__(
        self, kernels: dict[str, _Kernel], grids: dict[int, ast.expr], scalars: set[str]
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
            return ast.parse(gemm_call_for(op, args, kwargs), mode="eval").body
        if name.startswith("extern_kernels."):
            op = name.split(".", 1)[1]
            self.library_calls.append(op)
            import torch

            target = f"torch.{op}" if hasattr(torch, op) else f"torch.ops.aten.{op}"
            node.func = ast.parse(target, mode="eval").body
            return node
        if name.startswith(("aten.", "torch.ops.aten.")):
            op = name.split("aten.", 1)[1]
            self.library_calls.append(f"aten.{op}")
            node.func = ast.parse(f"torch.ops.aten.{op}", mode="eval").body
            return node
        return node

    def _launch(self, kernel: _Kernel, node: ast.Call) -> ast.Call:
        self.launched.append(kernel.name)
        runtime_args, constexprs = _kernel_params(kernel)
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
        keywords.append(ast.keyword("num_warps", ast.Constant(config.num_warps)))
        keywords.append(ast.keyword("num_stages", ast.Constant(config.num_stages)))
        grid = self.grids[id(node)]
        return ast.Call(
            func=ast.Subscript(ast.Name(kernel.name, ast.Load()), grid, ast.Load()),
            args=args,
            keywords=keywords,
        )


def _kernel_params(kernel: _Kernel) -> tuple[list[str], list[str]]:
    """(arguments passed at launch, `tl.constexpr` parameters set from the config) of a kernel.

    Inductor's launcher takes every parameter the `def` does not annotate `tl.constexpr`, in
    order (some of them, e.g. `xnumel == 1`, are specialised constants in its triton_meta but
    are still passed), and fills the annotated ones (XBLOCK, R0_BLOCK...) from the config.
    """
    params = kernel.autotuner.fn.params
    runtime = [p.name for p in params if not p.is_constexpr]
    constexprs = [p.name for p in params if p.is_constexpr]
    return runtime, constexprs


def _constant_args(kernel: _Kernel, node: ast.Call) -> dict[str, Any]:
    """The launch's arguments that are constants (sizes such as `xnumel`), by parameter name."""
    runtime_args, _ = _kernel_params(kernel)
    extra = list(kernel.autotuner.inductor_meta.get("extra_launcher_args", []))
    return {
        name: arg.value
        for name, arg in zip(runtime_args + extra, node.args, strict=False)
        if isinstance(arg, ast.Constant)
    }


def _grid_for(kernel: _Kernel, node: ast.Call) -> tuple[int, ...]:
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


def _launch_grid(kernel: _Kernel, node: ast.Call, static: bool) -> ast.expr:
    """The launch grid, written with the launch's own size arguments.

    Plain 1-3D block grids (`Grid1D/2D/3D`: pointwise and most reductions) become
    `lambda meta: (...)` of the block sizes, so that changing a block size at the launch (the
    tuner does) keeps the grid covering the output (with a literal grid, 2 of 3 tuner variants of
    the ReLU draft were mismatches on the H200: smaller blocks left the tail unwritten). Other
    grids (templates' `FixedGrid`, precomputed ones) become a tuple. Sizes are whatever the
    launch passes: literals in a static draft (`triton.cdiv(13000, meta['XBLOCK'])`), names of
    the host code in a dynamic one (`triton.cdiv(triton_poi_fused_relu_0_xnumel, meta['XBLOCK'])`).
    A static draft's grid is checked against Inductor's own for the chosen config.
    """
    import triton
    from torch._inductor.runtime import triton_heuristics

    inductor_meta = kernel.autotuner.inductor_meta
    grid_type = _grid_type(kernel.name, inductor_meta)
    runtime_args, _ = _kernel_params(kernel)
    extra = list(inductor_meta.get("extra_launcher_args", []))
    launch_args = dict(zip(runtime_args + extra, node.args, strict=False))
    follows = grid_type in _BLOCK_GRIDS
    meta = dict(kernel.config.kwargs)
    if follows:
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
        if grid.prefix:
            raise DraftUnsupportedError(f"kernel {kernel.name}: its grid needs a prefix")
        dims = [
            ast.parse(str(g), mode="eval").body for g in (grid.x_grid, grid.y_grid, grid.z_grid)
        ]
    except DraftUnsupportedError:
        raise
    except Exception as exc:
        raise DraftUnsupportedError(
            f"kernel {kernel.name}: cannot write its {grid_type} grid ({type(exc).__name__}: {exc})"
        ) from exc

    class _Args(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:
            if n.id in launch_args:
                return ast.parse(ast.unparse(launch_args[n.id]), mode="eval").body
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


def _find_call(tree: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
    raise DraftUnsupportedError("Inductor's wrapper has no `call` function")


def _rewrite_host(
    wrapper: str,
    kernels: dict[str, _Kernel],
    static: bool,
    scalars: set[int],
    first_tensor: int = 0,
) -> tuple[ast.FunctionDef, _HostRewriter, int]:
    """`call` as plain torch + Triton launches. `scalars`: positions in `args` of Python numbers
    Inductor took as 0-d tensors (a float attribute such as `self.eps`, read with `.item()`);
    `first_tensor`: the position of the first tensor (a dynamic draft's first are sizes)."""
    tree = ast.parse(wrapper)
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
                grids[id(node)] = _launch_grid(kernel, node, static)
    names = _unpacked_names(call)
    rewriter = _HostRewriter(kernels, grids, {names[i] for i in scalars if i < len(names)})
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
        device_stmt = ast.parse(f"device = {first_arg}.device").body[0]
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


def _returned_count(call: ast.FunctionDef) -> int:
    returns = [n for n in ast.walk(call) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1 or not isinstance(returns[0].value, (ast.Tuple, ast.List)):
        raise DraftUnsupportedError("Inductor's `call` does not end in one `return (outputs...)`")
    return len(returns[0].value.elts)


# --------------------------------------------------------------------------------------------
# The candidate file.


def _output_expr(value: Any, counter: list[int]) -> str:
    """Python that rebuilds Model.forward's output structure from the flat `outputs` tuple."""
    import torch

    if isinstance(value, torch.Tensor):
        counter[0] += 1
        return f"outputs[{counter[0] - 1}]"
    if isinstance(value, tuple):
        items = [_output_expr(v, counter) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_output_expr(v, counter) for v in value) + "]"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{k!r}: {_output_expr(v, counter)}" for k, v in value.items()) + "}"
    raise DraftUnsupportedError(
        f"Model.forward returns a {type(value).__name__}; only tensors and tuples/lists/dicts of them are supported"
    )


_HEADER_IMPORTS = (
    "import torch",
    "import torch.nn as nn",
    "import triton",
    "import triton.language as tl",
)


def _prelude(problem: _Problem) -> str:
    """The problem's imports, constants and helpers (what Model.__init__ may refer to)."""
    parts = []
    for node in problem.tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and ast.unparse(node) in _HEADER_IMPORTS:
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            continue
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            continue
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            continue
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            continue  # the problem's docstring
        segment = ast.get_source_segment(problem.source, node, padded=True)
        parts.append(segment if segment is not None else ast.unparse(node))
    return "\n".join(parts).strip()


def _model_new(
    problem: _Problem, forward_args: ast.arguments, call_args: list[str], output_expr: str
) -> str:
    """ModelNew: Model's class body (constructor and helpers) with a forward that calls `call`."""
    cls = _model_classdef(problem.tree)
    methods = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        segment = ast.get_source_segment(problem.source, node, padded=True)
        text = textwrap.dedent(segment) if segment is not None else ast.unparse(node)
        text = re.sub(r"\bsuper\(\s*Model\s*,\s*self\s*\)", "super()", text)
        methods.append(textwrap.indent(text, "    "))
    args = ast.unparse(forward_args)
    forward = (
        f"    def forward({args}):\n"
        f"        outputs = call([{', '.join(call_args)}])\n"
        f"        return {output_expr}\n"
    )
    bases = ", ".join(ast.unparse(b) for b in cls.bases) or "nn.Module"
    doc = '    """Model with its forward in the Triton kernels above (drafted from Inductor)."""\n'
    return f"class ModelNew({bases}):\n{doc}\n" + "\n\n".join(methods + [forward])


_REINTERPRET = '''
def reinterpret_tensor(tensor, size, stride, offset_increment=0):
    """A view of `tensor`'s storage (Inductor's `reinterpret_tensor`)."""
    return tensor.as_strided(size, stride, tensor.storage_offset() + offset_increment)
'''


def _assemble(
    problem: _Problem,
    torch_version: str,
    device: str,
    kernels: dict[str, _Kernel],
    rewriter: _KernelRewriter,
    call: ast.FunctionDef,
    host: _HostRewriter,
    model_new: str,
    sizes_doc: str,
) -> str:
    header = (
        f'"""Drafted by tools.inductor_draft from TorchInductor (torch {torch_version}, '
        f"{device} codegen).\n\n{sizes_doc}\n" + '"""\n'
    )
    imports = list(_HEADER_IMPORTS)
    if rewriter.libdevice_kept:
        imports.append("from triton.language.extra import libdevice")
    sections = [header + "\n".join(imports), _prelude(problem)]
    if rewriter.helpers:
        sections.append(
            "# Helpers copied from torch/_inductor/runtime/triton_helpers.py, or written for the\n"
            "# libdevice calls the Triton interpreter cannot run.\n"
            + "\n\n".join(rewriter.helpers.values())
        )
    launched = [k for k in dict.fromkeys(host.launched)]
    sections.extend(kernels[name].source for name in launched)
    if host.gemms:
        sections.append(
            "# This project's GEMM template (tools/gemm_template.py): sizes and strides from the\n"
            "# tensors, tf32x3 for fp32, split-K from the shapes; launch parameters at each call.\n"
            + GEMM_SOURCE.strip()
            + "\n"
        )
    if host.uses_reinterpret:
        sections.append(_REINTERPRET.strip() + "\n")
    host_source = ast.unparse(call)
    # ast.unparse writes `k[63,](...)`; the usual spelling is `k[(63,)](...)`.
    launch = (
        re.compile(rf"\b({'|'.join(map(re.escape, launched))})\[([^\]]*)\]\(") if launched else None
    )
    if launch is not None:
        host_source = launch.sub(lambda m: f"{m.group(1)}[({m.group(2)})](", host_source)
    sections.append(host_source + "\n")
    sections.append(model_new)
    return "\n\n".join(s.strip("\n") + "\n" for s in sections if s.strip())


# --------------------------------------------------------------------------------------------
# Hook (issue 15): library convolutions become this project's Triton convolution
# (tools/triton_conv.py), copied into the candidate. Two call sites in draft_candidate.

_CONV_TARGETS = {
    "torch.convolution": "convolution",
    "torch.ops.aten.convolution": "aten.convolution",
    "torch.ops.aten.convolution.default": "aten.convolution.default",
}


def _convolutions_in_triton(call: ast.FunctionDef, host: _HostRewriter) -> str:
    """Point the host code's library convolutions (`extern_kernels.convolution`, rewritten to
    `torch.convolution` by `_HostRewriter`, or an `aten.convolution` fallback) at
    `triton_convolution`, which has the same signature and takes every size from its tensors.
    Returns the kernels' source for the candidate ("" when the host code has no convolution)."""
    from tools import triton_conv

    replaced = set()
    for node in ast.walk(call):
        if isinstance(node, ast.Call) and _dotted(node.func) in _CONV_TARGETS:
            replaced.add(_CONV_TARGETS[_dotted(node.func)])
            node.func = ast.Name("triton_convolution", ast.Load())
    if not replaced:
        return ""
    host.library_calls[:] = [c for c in host.library_calls if c not in replaced]
    return triton_conv.candidate_source()


def _with_conv_source(source: str, conv_source: str) -> str:
    """The candidate with the convolution kernels placed just before the host code's `call`."""
    if not conv_source:
        return source
    at = re.search(r"^def call\(", source, re.M)
    if at is None:
        raise DraftUnsupportedError("no `def call(` in the assembled candidate")
    return source[: at.start()] + conv_source + "\n\n" + source[at.start() :]


def draft_candidate(
    problem_source: str, *, device: str = "cpu", sizes: str = "dynamic", settings: str = "default"
) -> DraftResult:
    """Draft a candidate for a KernelBench problem by rewriting Inductor's generated Triton.

    `device="cpu"` needs no GPU and gives a candidate that runs under `TRITON_INTERPRET=1`;
    `device="cuda"` runs Inductor's native CUDA path (autotuned block sizes and templates).
    `sizes="dynamic"` (default) drafts with symbolic sizes, so the candidate reads sizes, strides
    and Python-number attributes (`self.eps`) from what it gets at run time, and falls back to a
    static draft (a note says why) when that fails; `sizes="static"` bakes the problem's sizes in.
    `settings`: Inductor settings to draft with (`SETTINGS`: split/persistent reductions,
    coordinate descent, max-autotune for pointwise and reductions).
    Raises `ProblemError` for a problem that does not load, `ShimError` for a torch whose
    internals do not match, `DraftUnsupportedError` for generated code the rewriter cannot map.
    """
    import torch

    if device not in ("cpu", "cuda"):
        raise ProblemError(f"device must be 'cpu' or 'cuda', not {device!r}")
    if sizes not in ("dynamic", "static"):
        raise ProblemError(f"sizes must be 'dynamic' or 'static', not {sizes!r}")
    if settings not in SETTINGS:
        raise ProblemError(
            f"unknown Inductor settings {settings!r}; choose one of {', '.join(SETTINGS)}"
        )
    notes = check_torch_support()
    if device == "cuda" and not torch.cuda.is_available():
        raise ProblemError("device='cuda' asked for, but torch sees no CUDA device")
    problem = _load_problem(problem_source, device)
    if settings != "default":
        notes.append(f"Inductor settings {settings!r}: {SETTINGS[settings][3]}")
        if SETTINGS[settings][2]:
            sizes = "static"
    if sizes == "dynamic":
        try:
            return _draft(problem, device, True, settings, notes)
        except ProblemError:
            raise
        except Exception as exc:  # a rewriter limit, or internals of an untested torch
            notes.append(
                "sizes fixed at the problem's: the dynamic-shape draft failed "
                f"({type(exc).__name__}: {_first_line(exc)})"
            )
    return _draft(problem, device, False, settings, notes)


def _source_expr(source: str) -> str:
    """Dynamo's source of a graph input as Python inside `forward`: `L['x'].size()[0]` ->
    `x.shape[0]`, `L['self'].eps` -> `self.eps`."""
    expr = re.sub(r"\bL\['(\w+)'\]", r"\1", source).replace(".size()", ".shape")
    # self._modules['linear']._parameters['weight'] -> self.linear.weight (identifiers only)
    expr = re.sub(r"\._(?:modules|parameters|buffers)\['([A-Za-z_]\w*)'\]", r".\1", expr)
    try:
        ast.parse(expr, mode="eval")
    except SyntaxError:
        raise DraftUnsupportedError(f"cannot spell graph input {source!r} in forward") from None
    if "G[" in expr or "L[" in expr:
        raise DraftUnsupportedError(f"graph input {source!r} is not an argument or attribute")
    return expr


def _draft(
    problem: _Problem, device: str, dynamic: bool, settings: str, notes_before: list[str]
) -> DraftResult:
    import torch

    notes = list(notes_before)
    forward_args, forward_names = _forward_signature(problem)
    vararg = forward_args.vararg.arg if forward_args.vararg else None

    # In full fp32 (tools.precision): Inductor's GEMM/convolution templates read PyTorch's TF32
    # switches when they generate code (cuDNN's is on by default), and a TF32 template in an
    # fp32 candidate fails the judge's full-fp32 reference at KernelBench's sizes.
    with torch.no_grad(), full_fp32():
        reference = problem.model(*problem.inputs)
    with full_fp32():
        capture = _capture_inductor(problem, device, dynamic, settings)

    with tempfile.TemporaryDirectory(prefix="inductor_draft_") as workdir:
        with _stand_in_driver_if_needed() if device == "cpu" else contextlib.nullcontext():
            kernels = _load_kernels(capture.wrapper, capture.module, workdir)
    kernel_rewriter = _KernelRewriter(interpreter_safe=(device == "cpu"))
    for kernel in kernels.values():
        kernel.config, how = _pick_config(kernel)
        kernel.source = kernel_rewriter.rewrite(kernel)
        settings = ", ".join(f"{k}={v}" for k, v in kernel.config.kwargs.items())
        notes.append(
            f"{kernel.name}: {settings or 'no block sizes'}, num_warps={kernel.config.num_warps} ({how})"
        )

    sources = _tensor_sources(problem, forward_names, vararg)
    call_args, scalars, symbols = [], set(), {}
    for i, value in enumerate(capture.graph_inputs):
        source = capture.input_sources[i] if i < len(capture.input_sources) else None
        expr = None
        if isinstance(value, torch.Tensor):
            expr = next((e for t, e in sources if t is value), None)
            if expr is None and dynamic and value.dim() == 0 and source:
                expr = _source_expr(source)  # a Python number (`self.eps`) Inductor took as 0-d
                scalars.add(i)
        elif isinstance(value, (int, float, torch.SymInt, torch.SymFloat)) and source:
            expr = _source_expr(source)
            symbols[str(value)] = expr
        if expr is None:
            raise DraftUnsupportedError(
                "a graph input is neither a forward argument nor a parameter/buffer/tensor attribute "
                f"of Model (shape {tuple(getattr(value, 'shape', ()))})"
            )
        call_args.append(expr)
    first_tensor = next(
        (i for i, v in enumerate(capture.graph_inputs) if isinstance(v, torch.Tensor)), 0
    )
    call, host, n_args = _rewrite_host(capture.wrapper, kernels, not dynamic, scalars, first_tensor)
    conv_source = _convolutions_in_triton(call, host)  # issue 15 hook
    if conv_source:
        from tools.triton_conv import PRECISION_NOTE

        notes.append(PRECISION_NOTE)
    if n_args != len(capture.graph_inputs):
        raise DraftUnsupportedError(
            f"Inductor's call takes {n_args} tensors but the graph had {len(capture.graph_inputs)} inputs"
        )
    sizes_doc, fixed = _sizes_doc(capture, call_args, forward_names, vararg, symbols, dynamic)
    notes.append(sizes_doc.replace("\n", " "))
    if host.gemms:
        notes.append(
            f"GEMMs ({', '.join(host.gemms)}) use this project's template (tools/gemm_template.py), "
            "input_precision tf32x3 for fp32 operands (three TF32 products: about fp32 accuracy); "
            "launch parameters at each gemm(...) call, for the tuner"
        )
    counter = [0]
    output_expr = _output_expr(reference, counter)
    if counter[0] != _returned_count(call):
        raise DraftUnsupportedError(
            f"Model.forward returns {counter[0]} tensors, Inductor's call returns {_returned_count(call)} "
            "(outputs that alias inputs are not supported)"
        )

    if kernel_rewriter.libdevice_kept and device == "cpu":
        notes.append(
            "libdevice."
            + ", libdevice.".join(sorted(kernel_rewriter.libdevice_kept))
            + " kept: no interpreter equivalent, so this candidate needs a GPU"
        )
    notes += kernel_rewriter.notes
    library_calls = host.library_calls
    if library_calls:
        disallowed = [c for c in library_calls if c not in LIBRARY_CALLS_ALLOWED]
        notes.append(
            "forward calls library ops: "
            + ", ".join(library_calls)
            + (
                "; not accepted even under allow-library: " + ", ".join(disallowed)
                if disallowed
                else ""
            )
        )
    if not host.launched:
        notes.append("Inductor emitted no Triton kernel for this problem")
    source = _assemble(
        problem,
        torch.__version__,
        device,
        kernels,
        kernel_rewriter,
        call,
        host,
        _model_new(problem, forward_args, call_args, output_expr),
        sizes_doc
        + (
            "\nGEMMs: this project's template, tl.dot input precision tf32x3 for fp32 operands\n"
            "(the `precision=` of each gemm(...) call below says what it uses)."
            if host.gemms
            else ""
        ),
    )
    source = _with_conv_source(source, conv_source)  # issue 15 hook
    return DraftResult(
        source=source,
        mixed=bool(library_calls),
        library_calls=library_calls,
        kernels=list(dict.fromkeys(host.launched)) + (["_gemm_kernel"] if host.gemms else []),
        notes=notes,
        dynamic=dynamic,
        fixed_sizes=fixed,
        precision="tf32x3" if host.gemms else None,
        settings=settings,
    )


def _sizes_doc(
    capture: _Capture,
    call_args: list[str],
    forward_names: list[str],
    vararg: str | None,
    symbols: dict[str, str],
    dynamic: bool,
) -> tuple[str, list[str]]:
    """What the candidate's sizes depend on: a sentence for its docstring and the notes, and
    the list of what stays fixed (input dimensions Inductor specialised, its size guards)."""
    if not dynamic:
        return (
            "Sizes are fixed: block sizes, grids, tensor sizes and the model's Python-number\n"
            "attributes are the problem's; the candidate is correct at those sizes only.",
            ["every size (static draft)"],
        )
    fixed = []
    for expr, shape in zip(call_args, capture.input_shapes, strict=False):
        is_argument = expr in forward_names or (vararg and expr.startswith(f"{vararg}["))
        if shape is None or not is_argument:
            continue
        fixed += [f"{expr}.shape[{d}] == {n}" for d, n in enumerate(shape) if isinstance(n, int)]
    names = {**capture.symbol_sources, **symbols}
    for guard in capture.guards:
        text = re.sub(r"\b[a-z]+\d+\b", lambda m: names.get(m.group(0), m.group(0)), guard)
        text = re.sub(r"^Eq\((.*), ([^,]+)\)$", r"\1 == \2", text)
        left, _, right = text.partition(" == ")
        if left != right:  # a size equal to itself (two symbols for one source) says nothing
            fixed.append(text.replace("2147483647", "2**31 - 1"))
    text = "Sizes and strides are read from the inputs at run time."
    if fixed:
        text += (
            "\nFixed or assumed (Inductor specialised them): "
            + "; ".join(fixed[:12])
            + (f"; and {len(fixed) - 12} more" if len(fixed) > 12 else "")
            + "."
        )
    return text, fixed


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.inductor_draft PROBLEM.py [--device cuda]`: print the candidate."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("problem")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", default="dynamic", choices=["dynamic", "static"])
    parser.add_argument("--settings", default="default", choices=sorted(SETTINGS))
    parser.add_argument("--json", action="store_true", help="print the DraftResult as JSON")
    args = parser.parse_args(argv)
    with open(args.problem) as f:
        result = draft_candidate(
            f.read(), device=args.device, sizes=args.sizes, settings=args.settings
        )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(result.source)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def draft_job(
    problem_source: str,
    problem_path: str,
    *,
    device: str = "cpu",
    sizes: str = "dynamic",
    settings: str = "default",
) -> dict[str, Any]:
    """Sandbox entry point (`agent.drafters.CompilerDrafter`): plain data back, errors as text."""
    try:
        result = draft_candidate(problem_source, device=device, sizes=sizes, settings=settings)
    except (ShimError, ProblemError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:  # Inductor failing on an unusual model is a failed draft, not a crash
        return {"error": f"Inductor could not draft {problem_path}: {type(exc).__name__}: {exc}"}
    return {
        "source": result.source,
        "mixed": result.mixed,
        "library_calls": list(result.library_calls),
        "kernels": list(result.kernels),
        "notes": list(result.notes),
        "dynamic": result.dynamic,
        "fixed_sizes": list(result.fixed_sizes),
        "precision": result.precision,
        "settings": result.settings,
    }
