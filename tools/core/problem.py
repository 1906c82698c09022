"""Problems (KernelBench format) and candidate files: reading and static checks.

Static checks run in the agent's process on the *text* only (the AST); anything that executes
the file happens in a sandbox job (`tools.job.worker.reference_job`).
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from tools.core import pyast
from tools.core.errors import BadInputError, ProblemError

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


@dataclass(kw_only=True)
class Problem:
    """A KernelBench-format problem file."""

    path: str
    name: str
    source: str
    size_constants: dict[str, Any] = field(default_factory=dict)
    """Module-level numeric constants (batch sizes, dims, constructor settings): UPPER_CASE ones,
    and the lower-case ones KernelBench writes (`batch_size = 16`, `N = 2048 * 2`) that
    `get_inputs`/`get_init_inputs` use, directly or through another module-level assignment."""

    @property
    def size_uses(self) -> dict[str, str]:
        """Where each size constant is used: `input` (shapes of `get_inputs`, maybe also the
        constructor), `init` (only the constructor's arguments), `unused` (neither)."""
        return _size_uses(pyast.parse(self.source), self.size_constants)

    @property
    def derived_sizes(self) -> set[str]:
        """Size constants computed from other constants (`K = N * 2`): they follow those."""
        return {
            node.targets[0].id
            for node in pyast.parse(self.source).body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in self.size_constants
            and any(isinstance(n, ast.Name) for n in ast.walk(node.value))
        }

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def with_sizes(self, **sizes: Any) -> Problem:
        """The same problem with some size constants replaced (generalisation checks)."""
        tree = pyast.parse(self.source)
        lines = self.source.splitlines(keepends=True)
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in sizes
            ):
                name = node.targets[0].id
                start, end = node.lineno - 1, node.end_lineno
                lines[start:end] = [f"{name} = {sizes[name]!r}\n"]
                # keep line numbers stable
                lines[start + 1 : start + 1] = ["\n"] * (end - start - 1)
        src = "".join(lines)
        return Problem(
            path=self.path, name=self.name, source=src, size_constants=_constants(pyast.parse(src))
        )


def read_problem(path: str | os.PathLike[str]) -> Problem:
    """Read and statically check a problem file; raises ProblemError naming what is wrong."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ProblemError(f"problem file not found: {path}")
    if os.path.isdir(path):
        raise ProblemError(f"{path} is a directory, not a problem .py file")
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(f"cannot read problem file {path}: {exc}") from exc
    return problem_from_source(source, path)


def problem_from_source(source: str, path: str = "problem.py") -> Problem:
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        tree = pyast.parse(source, filename=path)
    except SyntaxError as exc:
        raise ProblemError(
            f"{path}: syntax error at line {exc.lineno}: {exc.msg}"
            + (f"\n    {exc.text.strip()}" if exc.text else "")
        ) from exc
    defined = _top_level_names(tree)
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        raise ProblemError(
            f"{path}: not a KernelBench problem: missing {', '.join('`' + m + '`' for m in missing)}. "
            "A problem defines `class Model(nn.Module)`, `get_inputs()` (a list of input tensors) "
            "and `get_init_inputs()` (the constructor's arguments)."
        )
    return Problem(path=path, name=name, source=source, size_constants=_constants(tree))


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    return names


def _constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level `name = <number or arithmetic of numbers and earlier constants>`: UPPER_CASE
    names always, lower-case ones when `get_inputs`/`get_init_inputs` use them."""
    values: dict[str, Any] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            value = _arithmetic(node.value, values)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values[node.targets[0].id] = value
    used = _names_used_by_factories(tree)
    return {k: v for k, v in values.items() if k.isupper() or k in used["input"] | used["init"]}


_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


def _arithmetic(node: ast.expr, known: dict[str, Any]) -> Any:
    """The value of `2048 * 2`, `-1`, `dim // 4` (names from `known`); None if not that simple."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) in (int, float) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _arithmetic(node.operand, known)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        a, b = _arithmetic(node.left, known), _arithmetic(node.right, known)
        if a is None or b is None or (isinstance(node.op, ast.Pow) and abs(b) > 64):
            return None
        try:
            return _ARITHMETIC[type(node.op)](a, b)
        except (ArithmeticError, ValueError):
            return None
    return None


def _names_used_by_factories(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names `get_inputs` ("input") and `get_init_inputs` ("init") read, directly
    or through other module-level assignments (`shape = (batch_size, dim)`)."""
    assigned: dict[str, set[str]] = {}
    bodies: dict[str, set[str]] = {}
    for node in tree.body:
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            bodies[node.name] = reads
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    assigned.setdefault(t.id, set()).update(reads - {t.id})

    def closure(names: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo.extend(assigned.get(n, ()))
        return seen

    return {
        "input": closure(bodies.get("get_inputs", set())),
        "init": closure(bodies.get("get_init_inputs", set())),
    }


def _size_uses(tree: ast.Module, constants: dict[str, Any]) -> dict[str, str]:
    used = _names_used_by_factories(tree)
    return {
        k: "input" if k in used["input"] else "init" if k in used["init"] else "unused"
        for k in constants
    }


@dataclass(kw_only=True)
class CandidateCheck:
    """Outcome of the static check of a candidate's text."""

    ok: bool
    status: str = "ok"
    message: str = ""
    line: int | None = None
    code: str | None = None
    kernels: list[str] = field(default_factory=list)


def read_kernel(path: str | os.PathLike[str]) -> str:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise BadInputError(f"kernel file not found: {path}")
    if os.path.isdir(path):
        raise BadInputError(f"{path} is a directory, not a kernel .py file")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"cannot read kernel file {path}: {exc}") from exc


def check_candidate_source(source: str, path: str = "candidate.py") -> CandidateCheck:
    """Parses? Defines ModelNew? Has at least one @triton.jit kernel?"""
    if not source.strip():
        return CandidateCheck(ok=False, status="bad_input", message="the candidate is empty")
    try:
        tree = pyast.parse(source, filename=path)
    except SyntaxError as exc:
        lines = source.splitlines()
        code = lines[exc.lineno - 1] if exc.lineno and 0 < exc.lineno <= len(lines) else exc.text
        return CandidateCheck(
            ok=False,
            status="syntax_error",
            message=f"SyntaxError: {exc.msg} (line {exc.lineno})",
            line=exc.lineno,
            code=code,
        )
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    kernels = [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and any(_is_triton_decorator(d) for d in n.decorator_list)
    ]
    if "ModelNew" not in classes:
        return CandidateCheck(
            ok=False,
            status="bad_input",
            message="the candidate defines no `class ModelNew(nn.Module)` (the drop-in replacement "
            "for Model, with the same constructor arguments)",
            kernels=kernels,
        )
    if not kernels and not _imports_other_packages(tree):
        # (A candidate that imports another package may launch that package's kernels, as a
        # ModelNew around a Liger-Kernel op does: the runtime audit decides, and refuses it
        # when no Triton launch is seen.)
        return CandidateCheck(
            ok=False,
            status="bad_input",
            message="the candidate defines no @triton.jit kernel: the work must be done in Triton",
        )
    tripped = _introspection_use(tree, source)
    if tripped is not None:
        node, what = tripped
        lines = source.splitlines()
        line = getattr(node, "lineno", None)
        return CandidateCheck(
            ok=False,
            status="cheat",
            message=f"the candidate uses {what} (line {line}): a kernel has no use for process "
            "introspection or dynamic code, which is how a candidate reaches into the harness",
            line=line,
            code=lines[line - 1] if line and 0 < line <= len(lines) else None,
            kernels=kernels,
        )
    return CandidateCheck(ok=True, kernels=kernels)


# Names a kernel never needs and a candidate attacking the harness in its own process does:
# walking the heap or the stack to reach the harness's objects (its reply pipe, the audit mode),
# popping the audit's dispatch mode, switching the profiler off, rewriting functions in place,
# and running code built from strings (which defeats this check). A tripwire, not a boundary:
# the dynamic checks (dispatch mode + profiler, integrity snapshot, guard) stand behind it.
INTROSPECTION_NAMES = frozenset(
    {
        "get_objects",
        "get_referrers",
        "get_referents",
        "_getframe",
        "currentframe",
        "f_back",
        "f_locals",
        "f_globals",
        "send_bytes",
        "addaudithook",
        "_pop_mode",
        "_pop_mode_temporarily",
        "_disable_current_modes",
        "_pop_torch_dispatch_stack",
        "_DisableTorchDispatch",
        "_ExcludeDispatchKeyGuard",
        "_disable_profiler",
        "_unset_dispatch_mode",
        "__closure__",
        "__code__",
        "__globals__",
        "_child_main",
    }
)
DYNAMIC_CODE_CALLS = frozenset({"exec", "eval", "__import__"})


def _introspection_use(tree: ast.Module, source: str) -> tuple[ast.AST, str] | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_NAMES:
            return node, f"`{node.attr}`"
        if isinstance(node, ast.Name) and node.id in INTROSPECTION_NAMES:
            return node, f"`{node.id}`"
        if isinstance(node, ast.alias) and node.name.split(".")[-1] in INTROSPECTION_NAMES:
            return node, f"`{node.name}`"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in DYNAMIC_CODE_CALLS
        ):
            return node, f"`{node.func.id}()`"
    return None


# Modules whose import says nothing about where kernels come from.
_NOT_KERNEL_SOURCES = frozenset({"torch", "triton", "numpy", "__future__", "typing_extensions"})


def _imports_other_packages(tree: ast.Module) -> bool:
    """Whether the candidate imports a package outside the standard library, torch, Triton and
    numpy (one that may define the @triton.jit kernels it launches)."""
    import sys

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in _NOT_KERNEL_SOURCES:
                return True
    return False


def _is_triton_decorator(d: ast.expr) -> bool:
    target = d.func if isinstance(d, ast.Call) else d
    text = ast.unparse(target)
    return text in (
        "triton.jit",
        "jit",
        "triton.autotune",
        "autotune",
        "triton.heuristics",
    ) or text.endswith(
        (
            ".jit",
            "triton_heuristics.pointwise",
            "triton_heuristics.reduction",
            "triton_heuristics.persistent_reduction",
        )
    )
