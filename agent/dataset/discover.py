"""Finding work: (problem, kernel) items from run directories, kernel files and plain modules
with an input recipe."""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.dataset.records import pair_key
from tools.core import pyast
from tools.core.errors import BadInputError, TritonAgentError
from tools.core.problem import Problem, problem_from_source

log = logging.getLogger(__name__)


# -- work items and discovery --------------------------------------------------------------------
@dataclass(kw_only=True)
class WorkItem:
    """One candidate to verify (or, with `code=None`, a problem to draft with the compiler)."""

    key: str
    """Resume key: `compiler:<device>:<problem digest>` or the pair key."""
    origin: str
    """Where it came from, for people: a path, `run/attempt`."""
    problem: Problem
    code: str | None
    source: str
    module_name: str
    repo_name: str
    provenance: dict[str, Any]
    speedup: float | None = None
    speedup_compile: float | None = None
    timed_on: str | None = None


@dataclass(kw_only=True)
class Discovery:
    items: list[WorkItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Files and attempts not used, each with the reason."""


def discover(
    sources: Iterable[str],
    *,
    device: str,
    problems_dir: str | None = None,
    repo_name: str | None = None,
) -> Discovery:
    """Work items for every source (folders, files, run directories); raises BadInputError for a
    source that does not exist."""
    found = Discovery()
    for src in sources:
        path = Path(src)
        if not path.exists():
            raise BadInputError(f"dataset source not found: {src}")
        if path.is_dir() and _is_run_dir(path):
            _run_items(path, found, repo_name)
        elif path.is_dir():
            runs = sorted(p for p in path.iterdir() if p.is_dir() and _is_run_dir(p))
            for run in runs:
                _run_items(run, found, repo_name)
            for f in sorted(path.glob("*.py")):
                _file_items(f, found, device=device, problems_dir=problems_dir, repo_name=repo_name)
            if not runs and not any(path.glob("*.py")):
                found.skipped.append(f"{src}: no .py files and no run directories")
        elif path.suffix == ".py":
            _file_items(path, found, device=device, problems_dir=problems_dir, repo_name=repo_name)
        else:
            raise BadInputError(
                f"{src}: a dataset source is a folder, a .py file or a run directory"
            )
    return found


def _is_run_dir(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "attempts").is_dir()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _defined(tree: ast.Module) -> tuple[set[str], list[str]]:
    """Top-level names, and the classes that subclass something called `Module`. A
    `@triton.jit` function adds the name `@triton.jit`."""
    names: set[str] = set()
    modules: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        if isinstance(node, ast.FunctionDef) and any(
            "triton" in ast.unparse(d) for d in node.decorator_list
        ):
            names.add("@triton.jit")
        if isinstance(node, ast.ClassDef) and any(
            (isinstance(b, ast.Attribute) and b.attr == "Module")
            or (isinstance(b, ast.Name) and b.id == "Module")
            for b in node.bases
        ):
            modules.append(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names, modules


def _file_items(
    path: Path, found: Discovery, *, device: str, problems_dir: str | None, repo_name: str | None
) -> None:
    text = _read_text(path)
    if text is None:
        found.skipped.append(f"{path}: unreadable")
        return
    try:
        names, modules = _defined(pyast.parse(text))
    except SyntaxError as e:
        if "ModelNew" not in text and "@triton.jit" not in text:
            found.skipped.append(f"{path}: syntax error at line {e.lineno}")
            return
        names, modules = {"ModelNew"}, []  # a broken kernel: the verifier gives it its verdict
    repo = repo_name or str(path.parent)
    if "ModelNew" in names or "@triton.jit" in names:  # a candidate (the verifier judges the rest)
        problem_path = _problem_for_kernel(path, problems_dir)
        if problem_path is None:
            where = problems_dir or f"{path.parent.parent / 'problems'} or {path.parent}"
            found.skipped.append(f"{path}: a kernel, but no problem of that name in {where}")
            return
        problem = _problem_file(problem_path, found)
        if problem is not None:
            found.items.append(
                WorkItem(
                    key=pair_key(problem.source, text),
                    origin=str(path),
                    problem=problem,
                    code=text,
                    source="given",
                    module_name=problem.name,
                    repo_name=repo_name or str(problem_path.parent),
                    provenance={"kind": "kernel", "path": str(path), "problem": str(problem_path)},
                )
            )
        return
    if {"Model", "get_inputs", "get_init_inputs"} <= names:
        problem = _problem(path, found, text)
        if problem is not None:
            found.items.append(
                _compiler_item(problem, device, repo, {"kind": "problem", "path": str(path)})
            )
        return
    if modules:
        problem = _problem_file(path, found, text)
        if problem is not None:
            found.items.append(
                _compiler_item(problem, device, repo, {"kind": "module", "path": str(path)})
            )
        return
    found.skipped.append(f"{path}: neither a problem, a module nor a kernel")


def _compiler_item(
    problem: Problem, device: str, repo: str, provenance: dict[str, Any]
) -> WorkItem:
    return WorkItem(
        key=f"compiler:{device}:{problem.digest}",
        origin=problem.path,
        problem=problem,
        code=None,
        source="compiler",
        module_name=problem.name,
        repo_name=repo,
        provenance=provenance,
    )


def _problem(path: Path, found: Discovery, source: str | None = None) -> Problem | None:
    try:
        text = source if source is not None else _read_text(path)
        if text is None:
            found.skipped.append(f"{path}: unreadable problem")
            return None
        return problem_from_source(text, str(path))
    except TritonAgentError as e:
        found.skipped.append(str(e))
        return None


def _problem_file(path: Path, found: Discovery, text: str | None = None) -> Problem | None:
    """A KernelBench problem file as is; a plain module file through its input recipe."""
    text = text if text is not None else _read_text(path)
    if text is None:
        found.skipped.append(f"{path}: unreadable problem")
        return None
    try:
        names, _ = _defined(pyast.parse(text))
    except SyntaxError as e:
        found.skipped.append(f"{path}: syntax error at line {e.lineno}")
        return None
    if {"Model", "get_inputs", "get_init_inputs"} <= names:
        return _problem(path, found, text)
    try:
        source, entry = module_to_problem(text, path)
    except BadInputError as e:
        found.skipped.append(str(e))
        return None
    problem = _problem(path, found, source)
    if problem is not None:
        problem.name = entry
    return problem


def _problem_for_kernel(kernel: Path, problems_dir: str | None) -> Path | None:
    """`relu.py`, `relu__mismatch.py` and `relu_inductor_style.py` all pair with `relu.py`: the
    problem whose stem is the kernel's stem, else the longest stem it starts with + `_`."""
    dirs = (
        [Path(problems_dir)] if problems_dir else [kernel.parent.parent / "problems", kernel.parent]
    )
    for d in dirs:
        if not d.is_dir():
            continue
        stems = {p.stem: p for p in d.glob("*.py") if p.resolve() != kernel.resolve()}
        if kernel.stem in stems:
            return stems[kernel.stem]
        prefixes = [s for s in stems if kernel.stem.startswith(s + "_")]
        if prefixes:
            return stems[max(prefixes, key=len)]
    return None


def _run_items(run: Path, found: Discovery, repo_name: str | None) -> None:
    try:
        config = json.loads((run / "config.json").read_text())
    except (OSError, ValueError) as e:
        found.skipped.append(f"{run}: unreadable config.json ({e})")
        return
    raw = config.get("_problem_path")
    problem_path = _resolve_problem_path(raw, run) if raw else None
    if problem_path is None:
        found.skipped.append(f"{run}: its problem file {raw!r} is not found")
        return
    problem = _problem(problem_path, found)
    if problem is None:
        return
    for attempt in sorted(p for p in (run / "attempts").iterdir() if p.is_dir()):
        where = f"{run.name}/{attempt.name}"
        try:
            claimed = json.loads((attempt / "verdict.json").read_text()).get("status")
        except (OSError, ValueError):
            found.skipped.append(f"{where}: no readable verdict.json")
            continue
        if claimed != "ok":
            continue  # only attempts the run found correct; they are re-verified below
        code = _read_text(attempt / "kernel.py")
        if not code:
            found.skipped.append(f"{where}: verdict ok but no kernel.py")
            continue
        meta: dict[str, Any] = {}
        try:
            meta = json.loads((attempt / "attempt.json").read_text())
        except (OSError, ValueError):
            pass
        speedups = meta.get("speedups") or {}
        profile = meta.get("profile") or {}
        timed = meta.get("speedup") is not None or bool(speedups)
        found.items.append(
            WorkItem(
                key=pair_key(problem.source, code),
                origin=where,
                problem=problem,
                code=code,
                source=str(meta.get("source") or "llm:unknown"),
                module_name=problem.name,
                repo_name=repo_name or str(problem_path.parent),
                provenance={
                    "kind": "run",
                    "path": str(run),
                    "run_id": run.name,
                    "attempt": meta.get(
                        "index", int(attempt.name) if attempt.name.isdigit() else attempt.name
                    ),
                },
                speedup=speedups.get("eager", meta.get("speedup")),
                speedup_compile=speedups.get("compile"),
                timed_on=(profile.get("device") if isinstance(profile, dict) else None)
                or ("cuda" if timed else None),
            )
        )


def _resolve_problem_path(raw: str, run: Path) -> Path | None:
    """The run's `_problem_path` as written (absolute, or relative to where the run was started:
    the current directory, or the folder holding `runs/`)."""
    candidates = [Path(raw)]
    if not Path(raw).is_absolute():
        candidates += [run.parent.parent / raw, run.parent / raw]
    return next((c for c in candidates if c.is_file()), None)


# -- plain modules with an input recipe ----------------------------------------------------------
_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool"}


def module_to_problem(text: str, path: Path) -> tuple[str, str]:
    """A plain-module file and its recipe as a KernelBench problem source; returns (source, entry
    point). The recipe is a sidecar `<stem>.json`:

        {"entry_point": "Foo", "init": [64], "inputs": [[16, 64], {"shape": [16], "dtype": "int64", "high": 10}]}

    each input a shape (float32 `randn`), a `{"shape", "dtype", "kind": randn|rand|randint,
    "low", "high"}` object, or a number. Without a sidecar the file must define `get_inputs()`
    (and may define `get_init_inputs()`; default no arguments). The entry point defaults to the
    file's only `nn.Module` subclass."""
    tree = pyast.parse(text)
    names, modules = _defined(tree)
    sidecar = path.with_suffix(".json")
    recipe: dict[str, Any] = {}
    if sidecar.is_file():
        try:
            recipe = json.loads(sidecar.read_text())
        except ValueError as e:
            raise BadInputError(f"{sidecar}: not valid JSON ({e})") from e
        if not isinstance(recipe, dict):
            raise BadInputError(f"{sidecar}: the recipe must be a JSON object")
    elif "get_inputs" not in names:
        raise BadInputError(
            f"{path}: a module without an input recipe: add {sidecar.name} "
            '({"inputs": [[shape...], ...]}) or define get_inputs()'
        )
    entry = recipe.get("entry_point")
    if entry is None:
        if "Model" in modules:
            entry = "Model"
        elif len(modules) == 1:
            entry = modules[0]
        else:
            raise BadInputError(
                f"{path}: several nn.Module classes ({', '.join(modules)}); name the one "
                f'to convert in {sidecar.name}: {{"entry_point": "..."}}'
            )
    if entry not in modules:
        raise BadInputError(f"{path}: entry point {entry!r} is not an nn.Module class of the file")
    lines = [
        text.rstrip("\n"),
        "",
        "",
        f"# --- KernelBench entry points added by `agent dataset` "
        f"({sidecar.name if recipe else 'get_inputs in the file'}) ---",
        "import torch",
        "",
    ]
    if entry != "Model":
        lines += [f"Model = {entry}", ""]
    if "inputs" in recipe:
        specs = recipe["inputs"]
        if not isinstance(specs, list):
            raise BadInputError(f'{sidecar}: "inputs" must be a list')
        exprs = [_input_expr(s, sidecar) for s in specs]
        lines += ["", "def get_inputs():", f"    return [{', '.join(exprs)}]", ""]
    elif "get_inputs" not in names:
        raise BadInputError(f'{sidecar}: no "inputs" and no get_inputs() in {path.name}')
    if "init" in recipe:
        init = recipe["init"]
        if not isinstance(init, list):
            raise BadInputError(f'{sidecar}: "init" must be a list of constructor arguments')
        lines += ["", "def get_init_inputs():", f"    return {init!r}", ""]
    elif "get_init_inputs" not in names:
        lines += ["", "def get_init_inputs():", "    return []", ""]
    return "\n".join(lines), entry


def _input_expr(spec: Any, sidecar: Path) -> str:
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return repr(spec)
    if isinstance(spec, list):
        spec = {"shape": spec}
    if (
        not isinstance(spec, dict)
        or not isinstance(spec.get("shape"), list)
        or not all(isinstance(d, int) and d >= 0 for d in spec["shape"])
    ):
        raise BadInputError(
            f"{sidecar}: an input is a shape list, a number, or "
            f'{{"shape": [...], "dtype": ..., "kind": ...}}; got {spec!r}'
        )
    dtype = spec.get("dtype", "float32")
    if dtype not in _DTYPES:
        raise BadInputError(
            f"{sidecar}: unknown dtype {dtype!r} (one of {', '.join(sorted(_DTYPES))})"
        )
    kind = spec.get(
        "kind", "randint" if dtype.startswith(("int", "uint")) or dtype == "bool" else "randn"
    )
    shape = ", ".join(str(d) for d in spec["shape"]) + ("," if len(spec["shape"]) == 1 else "")
    if kind == "randint":
        low, high = int(spec.get("low", 0)), int(spec.get("high", 2 if dtype == "bool" else 10))
        return f"torch.randint({low}, {high}, ({shape})).to(torch.{dtype})"
    if kind in ("randn", "rand"):
        return f"torch.{kind}(({shape}), dtype=torch.{dtype})"
    raise BadInputError(f"{sidecar}: unknown input kind {kind!r} (randn, rand, randint)")
