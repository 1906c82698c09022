"""The problem as the drafter needs it: executed, its Model built, its inputs made on the device,
and where every tensor Inductor may take as input lives inside `ModelNew.forward`.

`tools.problem.Problem` is the problem file read and checked as text; `LoadedProblem` is that
file run (only ever inside the drafter's sandbox job)."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import linecache
import types
from typing import Any

from tools import pyast
from tools.draft.result import DraftUnsupportedError
from tools.errors import ProblemError


@dataclasses.dataclass
class LoadedProblem:
    module: types.ModuleType
    tree: ast.Module
    source: str
    model: Any
    inputs: list[Any]


def load_problem(source: str, device: str) -> LoadedProblem:
    import torch

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
    return LoadedProblem(module, tree, source, model, inputs)


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
