"""The problem as the drafter needs it: executed, its Model built, its inputs made on the device,
and where every tensor Inductor may take as input lives inside `ModelNew.forward`.

`tools.core.problem.Problem` is the problem file read and checked as text; `LoadedProblem` is that
file run (only ever inside the drafter's sandbox job)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import linecache
import re
import types
from typing import Any

from tools.core import pyast
from tools.core.errors import ProblemError
from tools.core.problem import INTROSPECTION_NAMES
from tools.core.problem_dtype import cast_floating, cast_model, job_precision, torch_dtype
from tools.draft.result import DraftUnsupportedError
from tools.draft.state import Layout, attribute_layouts


@dataclasses.dataclass
class LoadedProblem:
    module: types.ModuleType
    tree: ast.Module
    source: str
    model: Any
    inputs: list[Any]
    constructed: dict[str, Layout] = dataclasses.field(default_factory=dict)
    """The model's plain tensor attributes as constructed (`tools.draft.state`): a fresh model's,
    the verifier's, before any forward reassigns or moves them (the drafter runs forward on
    `model` before Inductor traces it)."""


def load_problem(source: str, device: str, precision: str | None = None) -> LoadedProblem:
    """The problem executed, its Model built and its inputs made on `device`, at `precision`
    (default: the job's, `tools.core.problem_dtype.job_precision`): the model's floating parameters
    and buffers and its floating inputs cast as the verifier casts them, so Inductor traces and
    generates kernels for that dtype (bf16/fp16 loads and stores, fp32 accumulation)."""
    import torch

    dtype = torch_dtype(precision or job_precision())

    try:
        tree = pyast.parse(source)
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
        model = module.Model(*cast_floating(list(module.get_init_inputs()), dtype))
        # Inputs made on the device (a 6.4 GB KernelBench input is not built on the host and
        # copied); the values do not matter to the draft, only shapes, dtypes and layouts.
        with torch.device(device) if device == "cuda" else contextlib.nullcontext():
            inputs = list(module.get_inputs())
    except Exception as exc:
        raise ProblemError(
            f"building Model or its inputs failed: {type(exc).__name__}: {exc}"
        ) from exc
    model = cast_model(model.to(device), dtype)
    inputs = cast_floating(
        [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs], dtype
    )
    return LoadedProblem(module, tree, source, model, inputs, attribute_layouts(model))


def draft_model(module: types.ModuleType, init_inputs: list, device: str) -> Any:
    """A draft's `ModelNew(*init_inputs)` built under seed 0 on `device` at the job's precision,
    as the verifier builds a candidate's (`tools.job.job_common`): its floating constructor
    tensors, parameters and buffers cast (`tools.core.problem_dtype`; nothing at fp32). Every
    draft-time choice that runs a draft's forward on the problem's inputs (`load_problem`: cast
    the same way) builds its model here. Built at fp32 beside bf16/fp16 inputs (H200, session
    19), each convolution of a half-precision draft had 2-byte inputs and fp32 weights, its
    tl.dot did not compile, and every convolution pick and sized path of levels 1/50 and 1/55
    was "not timed at draft time (CompilationError: at 107:18:)" (issue 36)."""
    import torch

    dtype = torch_dtype(job_precision())
    torch.manual_seed(0)
    model = module.ModelNew(*cast_floating(list(init_inputs), dtype))
    return cast_model(model.to(device), dtype)


def forward_signature(problem: LoadedProblem) -> tuple[ast.arguments, list[str]]:
    """The Model.forward argument list (AST) and the names of its positional parameters."""
    model_cls = model_classdef(problem.tree)
    for node in model_cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            names = [a.arg for a in node.args.posonlyargs + node.args.args][1:]
            return node.args, names
    raise ProblemError("Model has no `forward` method written in the problem file")


def model_classdef(tree: ast.Module) -> ast.ClassDef:
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


def tensor_sources(
    problem: LoadedProblem, forward_args: list[str], vararg: str | None
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


INTROSPECTION = tuple(
    sorted(
        INTROSPECTION_NAMES
        | {
            "cell_contents",
            "__dict__",
            "__defaults__",
            "__kwdefaults__",
            "__self__",
            "__func__",
            "__wrapped__",
            "__class__",
            "__builtins__",
            "gi_frame",
            "tb_frame",
        }
    )
)
"""Names through which dynamo may reach an object (a lambda's closure: minGPT's `self.mlpf`):
the verifier's tripwire (`tools.core.problem.INTROSPECTION_NAMES`, docs/verification.md step 1:
`__closure__`, frames, `__globals__`...) and the other ways to an object's insides. A draft
spells none of them."""

_INTROSPECTION_RE = re.compile(r"\b(?:" + "|".join(map(re.escape, INTROSPECTION)) + r")\b")


def uses_introspection(text: str) -> list[str]:
    """The introspection names (`INTROSPECTION`) that `text` spells, in order, once each."""
    return list(dict.fromkeys(_INTROSPECTION_RE.findall(text)))


def plain_expr(problem: LoadedProblem, expr: str) -> str:
    """`expr` (Python inside `forward`, from a dynamo source: `self.mlpf.__closure__[0]
    .cell_contents.c_fc.weight.shape[0]`) with the part that reaches an object through
    introspection replaced by where that object is in the model (`self.mlp.c_fc.weight.shape[0]`),
    found by identity among the model's submodules, parameters, buffers and tensor attributes.
    Raises DraftUnsupportedError, naming the expression, where there is no such place."""
    if not uses_introspection(expr):
        return expr
    steps: list[ast.expr] = []
    node = pyast.parse(expr, mode="eval").body
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        steps.append(node)
        node = node.value
    steps.reverse()
    hidden = [  # the steps that are introspection themselves
        i
        for i, s in enumerate(steps)
        if uses_introspection(s.attr if isinstance(s, ast.Attribute) else ast.unparse(s.slice))
    ]
    if not (isinstance(node, ast.Name) and node.id == "self") or not hidden:
        raise DraftUnsupportedError(
            f"{expr!r} is reached through introspection ({', '.join(uses_introspection(expr))}), "
            "which a candidate may not use"
        )
    # The first object at or after the last introspective step that the model holds (after
    # `self.__dict__` comes `['ln_1']`, the submodule `self.ln_1`).
    for k in range(hidden[-1], len(steps)):
        prefix = ast.unparse(steps[k])
        try:
            # a dynamo source's attribute chain, evaluated on the drafter's own model
            target = eval(
                compile(ast.Expression(steps[k]), "<source>", "eval"), {}, {"self": problem.model}
            )
        except Exception as exc:
            raise DraftUnsupportedError(f"{expr!r}: {prefix!r} fails: {exc}") from exc
        path = attribute_path(problem.model, target)
        if path is not None:
            if k + 1 == len(steps):
                return path
            steps[k + 1].value = pyast.parse(path, mode="eval").body
            return ast.unparse(steps[-1])
    raise DraftUnsupportedError(
        f"{expr!r} is reached only through introspection ({', '.join(uses_introspection(expr))}): "
        "no submodule, parameter, buffer or tensor attribute of Model is that object, and a "
        "candidate may not use introspection"
    )


def attribute_path(model: Any, target: Any) -> str | None:
    """Python inside `forward` for `target`, found by identity: `self`, a submodule
    (`self.mlp`, `self.get_submodule("net.0")`), a parameter, a buffer or a tensor attribute of
    a submodule; None where it is none of them."""
    import torch

    if target is model:
        return "self"
    if isinstance(target, torch.nn.Module):
        for name, module in model.named_modules(remove_duplicate=False):
            if module is target and name:
                if all(p.isidentifier() for p in name.split(".")):
                    return "self." + name
                return f"self.get_submodule({name!r})"
        return None
    if isinstance(target, torch.Tensor):
        for name, p in model.named_parameters(remove_duplicate=False):
            if p is target:
                return _attribute_expr(name, "parameter")
        for name, b in model.named_buffers(remove_duplicate=False):
            if b is target:
                return _attribute_expr(name, "buffer")
        for mod_name, mod in model.named_modules():
            for attr, value in vars(mod).items():
                if value is target and not attr.startswith("_"):
                    path = f"{mod_name}.{attr}" if mod_name else attr
                    return _attribute_expr(path, "attribute")
    return None


def plain_sources(problem: LoadedProblem, names: dict[str, str]) -> dict[str, str]:
    """`names` (size symbols -> Python) with each expression through `plain_expr`; a symbol
    whose expression has no plain spelling is left out (it is then named by its symbol)."""
    out = {}
    for symbol, expr in names.items():
        try:
            out[symbol] = plain_expr(problem, expr)
        except DraftUnsupportedError:
            continue
    return out
