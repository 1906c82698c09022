"""Verified (PyTorch, Triton) pairs for fine-tuning: discover, verify, deduplicate, append.

`build()` turns sources into work items, verifies each candidate kernel in the sandbox (the
compiler drafter writes one first where a source has none) and appends one `PairRecord` per
verified kernel to a JSONL file. Three kinds of source (docs/dataset.md):

- a folder (or file) of KernelBench problems: each is drafted by the compiler drafter;
- a folder of plain modules with an input recipe (a sidecar `<name>.json`, or `get_inputs()` in
  the file): each becomes a KernelBench problem, then is drafted like one;
- a folder of kernels (`class ModelNew`), each paired by file name with a problem;
- a run directory (`runs/<id>/`) or a folder of them: every attempt whose verdict.json says
  `ok`, re-verified here first (a verdict file is a claim, not evidence).

Only kernels whose fresh verdict is `ok` are written. Pairs are deduplicated on normalised code
(comments, docstrings and formatting removed). Every work item's outcome goes to a ledger next to
the output (`pairs.ledger.jsonl`), so an interrupted or repeated build skips what it has done.

Heavy imports (torch, the drafter, profiling) are made where they are used, so this module loads
on a machine without the loop's dependencies (langgraph, rich, openai).
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tools.errors import BadInputError, TritonAgentError
from tools.evaluate import evaluate
from tools.problem import Problem, problem_from_source
from tools.results import strict_json

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
OP_FAMILIES = ("elementwise", "reduction", "norm", "softmax", "matmul", "conv", "loss", "other")
RETRY_STATUSES = ("draft_failed", "error")
"""Ledger outcomes retried by the next build (drafter failures, infrastructure errors); every
other outcome (a verdict, a duplicate) is final."""

Event = Callable[[dict[str, Any]], None]


# -- the record ----------------------------------------------------------------------------------
@dataclass(kw_only=True)
class PairRecord:
    """One verified (PyTorch, Triton) pair: KernelBook's columns, then ours."""

    # KernelBook's columns
    entry_point: str
    """The class the prompt names and the kernel replaces (`Model` for KernelBench problems)."""
    python_code: str
    """The PyTorch program, KernelBench format (`Model`, `get_inputs`, `get_init_inputs`)."""
    triton_code: str
    """The verified candidate (`class ModelNew` launching `@triton.jit` kernels)."""
    repo_name: str
    """Where the PyTorch code came from: `--repo-name`, else the problem's folder as given."""
    module_name: str
    """The module's own name: the problem file's stem, or the recipe's entry point."""
    license: str
    """SPDX identifier of the PyTorch code's license (`--license`; `unknown` when not given)."""
    # ours
    key: str
    """Deduplication key: sha256 of the normalised python_code and triton_code (16 hex)."""
    source: str
    """Who wrote the kernel: `compiler`, `llm:<model>` or `given` (a kernels folder)."""
    verdict: str
    """The status of the fresh verification: always `ok` for an admitted pair."""
    trials: int
    atol: float | None
    rtol: float | None
    policy: str = "strict"
    mixed: bool = False
    """Library matmul/conv ran outside Triton (only possible under `--policy allow-library`)."""
    device: str = "cpu"
    """Where it was verified: `cpu` (Triton interpreter) or the GPU's name (`cuda` if unknown)."""
    speedup: float | None = None
    """Over eager PyTorch, where timed on a GPU (this build's profile, or the run's)."""
    speedup_compile: float | None = None
    """Over `torch.compile`, where timed."""
    timed_on: str | None = None
    """The GPU the speedups were measured on."""
    provenance: dict[str, Any] = field(default_factory=dict)
    """`kind` (problem, module, kernel, run) and where: `path`, `run_id`, `attempt`."""
    versions: dict[str, str] = field(default_factory=dict)
    """torch and triton versions of the verification."""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# -- normalisation and keys ----------------------------------------------------------------------
def normalize_code(code: str) -> str:
    """The code without comments, docstrings, blank lines and formatting differences.

    `ast.unparse` of the parsed module with docstrings dropped; code that does not parse falls
    back to its lines stripped of `#` comments and whitespace."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        lines = (re.sub(r"#.*$", "", ln).strip() for ln in code.splitlines())
        return "\n".join(re.sub(r"\s+", " ", ln) for ln in lines if ln)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _sha(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def pair_key(python_code: str, triton_code: str) -> str:
    return _sha(normalize_code(python_code) + "\n\0\n" + normalize_code(triton_code))


# -- op families ---------------------------------------------------------------------------------
# First match wins, heaviest op first: a Linear followed by a ReLU is a matmul problem, a loss
# built from a mean is a loss. Patterns are matched against the problem's class bodies only
# (get_inputs' torch.randn would otherwise look like compute).
_FAMILY_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "loss",
        re.compile(
            r"loss|cross_entropy|\bnll|kl_div|hinge|triplet|margin_ranking|"
            r"cosine_embedding|smooth_l1|huber|mean\(\s*\(.+-.+\)\s*\*\*\s*2",
            re.I,
        ),
    ),
    ("conv", re.compile(r"conv(?:_?transpose)?[123]d|\bconv\(|\bunfold\b|\bfold\b", re.I)),
    (
        "matmul",
        re.compile(
            r"matmul|\bmm\(|\bbmm\(|addmm|baddbmm|einsum|\blinear\b|\bbilinear\b|"
            r"[^@]@[^@]|\bdot\(|\bouter\(|\btensordot\b",
            re.I,
        ),
    ),
    (
        "norm",
        re.compile(
            r"norm\b|_norm\(|norm\d?d\b|layernorm|batchnorm|groupnorm|instancenorm|"
            r"rmsnorm|\bnormalize\(|\bnorm\(",
            re.I,
        ),
    ),
    ("softmax", re.compile(r"softmax|softmin", re.I)),
    (
        "reduction",
        re.compile(
            r"\b(sum|mean|prod|amax|amin|argmax|argmin|cumsum|cumprod|var|std|"
            r"logsumexp|max|min|median|mode|all|any|norm)\(",
            re.I,
        ),
    ),
    (
        "elementwise",
        re.compile(
            r"relu|gelu|sigmoid|tanh|silu|swish|\belu|selu|celu|mish|hardtanh|"
            r"hardswish|hardsigmoid|softplus|softsign|leaky|\bexp\(|\blog\(|"
            r"sqrt|rsqrt|\babs\(|clamp|\bwhere\(|maximum|minimum|\bpow\(|"
            r"dropout|\bsign\(|\bneg\(|reciprocal",
            re.I,
        ),
    ),
]


def classify_op(python_code: str) -> str:
    """The op family of a PyTorch program (keyword heuristics): one of `OP_FAMILIES`."""
    try:
        tree = ast.parse(python_code)
    except SyntaxError:
        text, arith = python_code, False
    else:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        for c in classes:  # docstrings say "normalizes", "loss of precision"...
            for node in ast.walk(c):
                if (
                    isinstance(node, (ast.ClassDef, ast.FunctionDef))
                    and node.body
                    and isinstance(node.body[0], ast.Expr)
                    and isinstance(node.body[0].value, ast.Constant)
                ):
                    node.body = node.body[1:] or [ast.Pass()]
        text = "\n".join(ast.unparse(c) for c in classes) or python_code
        arith = any(  # `x * 2`, `-x`; not the `-1` of `view(-1)`
            isinstance(n, ast.BinOp)
            or (isinstance(n, ast.UnaryOp) and not isinstance(n.operand, ast.Constant))
            for c in classes
            for f in ast.walk(c)
            if isinstance(f, ast.FunctionDef) and f.name == "forward"
            for n in ast.walk(f)
        )
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.search(text):
            return family
    return "elementwise" if arith else "other"


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
        names, modules = _defined(ast.parse(text))
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
        names, _ = _defined(ast.parse(text))
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
    tree = ast.parse(text)
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


# -- the output files ----------------------------------------------------------------------------
def ledger_path(out: str | os.PathLike[str]) -> Path:
    """`pairs.jsonl` -> `pairs.ledger.jsonl`: one line per work item processed."""
    p = Path(out)
    return p.with_name(p.stem + ".ledger" + (p.suffix or ".jsonl"))


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The objects of a JSONL file; a torn last line (a killed writer) is ignored."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    lines = p.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if n == len(lines) and out:  # a torn last line after good ones: a killed writer
                continue
            raise BadInputError(f"{path}: line {n} is not JSON") from None
        if not isinstance(out[-1], dict):
            raise BadInputError(f"{path}: line {n} is not a JSON object")
    return out


def read_pairs(path: str | os.PathLike[str]) -> list[PairRecord]:
    if not Path(path).is_file():
        raise BadInputError(f"pairs file not found: {path}")
    records = []
    for data in read_jsonl(path):
        if data.get("schema_version", 0) > SCHEMA_VERSION:
            raise BadInputError(
                f"{path}: schema_version {data['schema_version']} is newer than this "
                f"code's {SCHEMA_VERSION}"
            )
        records.append(PairRecord.from_dict(data))
    return records


class _Appender:
    """Appends whole lines to a file with one `write` each (O_APPEND), fsynced; a torn last line
    left by a killed writer is cut off first."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _drop_torn_tail(path)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, obj: dict[str, Any]) -> None:
        data = (strict_json(obj) + "\n").encode()
        os.write(self.fd, data)
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


def _drop_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        data = f.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        log.warning(
            "%s: dropping a torn last line (%d bytes) left by an interrupted build",
            path,
            len(data) - cut,
        )
        f.truncate(cut)


# -- building ------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class BuildSummary:
    out: str
    ledger: str
    items: int = 0
    """Work items discovered."""
    admitted: int = 0
    duplicates: int = 0
    resumed: int = 0
    """Items skipped because an earlier build finished them."""
    rejected: dict[str, int] = field(default_factory=dict)
    """Verdict status -> count, for kernels that failed re-verification."""
    retry_later: int = 0
    """Drafter failures and infrastructure errors (retried by the next build)."""
    records_total: int = 0
    skipped: list[str] = field(default_factory=list)
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build(
    sources: Iterable[str],
    out: str | os.PathLike[str],
    *,
    verifier: Any,
    problems_dir: str | None = None,
    repo_name: str | None = None,
    license: str = "unknown",
    jobs: int | None = None,
    profile: bool | None = None,
    on_event: Event | None = None,
) -> BuildSummary:
    """Verify every candidate the sources hold and append the verified pairs to `out`.

    `verifier` is a `tools.verify.Verifier`; its sandbox bounds the parallelism (one job per core
    or GPU); `jobs` threads feed it (default: its slot count). `profile` (default: on a GPU) times
    each admitted kernel. Resumable: items finished by an earlier build of `out` are skipped."""
    emit = on_event or (lambda e: None)
    out_path = Path(out)
    ledger = ledger_path(out_path)
    device = verifier.device
    found = discover(sources, device=device, problems_dir=problems_dir, repo_name=repo_name)
    summary = BuildSummary(
        out=str(out_path),
        ledger=str(ledger),
        items=len(found.items),
        skipped=found.skipped,
        device=device,
    )
    for s in found.skipped:
        emit({"event": "skipped", "message": s})

    ledger_file = _Appender(ledger)
    try:  # the ledger's lock keeps two builds off the same output
        fcntl.flock(ledger_file.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        ledger_file.close()
        raise BadInputError(f"another `dataset build` is writing {out_path}") from None
    try:
        keys = {r.get("key") for r in read_jsonl(out_path)} - {None}
        done = {e["item"] for e in read_jsonl(ledger) if e.get("status") not in RETRY_STATUSES}
        todo = []
        for item in found.items:
            if item.key in done or (item.code is not None and item.key in keys):
                summary.resumed += 1
            else:
                todo.append(item)
        emit(
            {
                "event": "start",
                "items": len(found.items),
                "todo": len(todo),
                "device": device,
                "out": str(out_path),
            }
        )
        if profile is None:
            profile = device == "cuda"
        state = _BuildState(
            keys=keys, records=_Appender(out_path), ledger=ledger_file, summary=summary, emit=emit
        )
        try:
            workers = max(1, jobs or verifier.sandbox.slots)
            drafter = _make_drafter(verifier) if any(i.code is None for i in todo) else None
            versions = _versions()
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dataset") as pool:
                for _ in pool.map(
                    lambda it: _process(
                        it,
                        verifier,
                        drafter,
                        state,
                        license=license,
                        profile=profile,
                        versions=versions,
                    ),
                    todo,
                ):
                    pass
        finally:
            state.records.close()
        summary.records_total = len(state.keys)
    finally:
        ledger_file.close()  # releases the lock
    emit({"event": "finish", **summary.to_dict()})
    return summary


@dataclass(kw_only=True)
class _BuildState:
    keys: set[str]
    records: _Appender
    ledger: _Appender
    summary: BuildSummary
    emit: Event
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, item: WorkItem, status: str, message: str = "", key: str | None = None) -> None:
        with self.lock:
            self.ledger.append(
                {
                    "item": item.key,
                    "origin": item.origin,
                    "source": item.source,
                    "status": status,
                    "message": message[:500],
                    "record": key,
                }
            )
            s = self.summary
            if status == "ok":
                s.admitted += 1
            elif status == "duplicate":
                s.duplicates += 1
            elif status in RETRY_STATUSES:
                s.retry_later += 1
            else:
                s.rejected[status] = s.rejected.get(status, 0) + 1
        self.emit(
            {
                "event": "item",
                "origin": item.origin,
                "source": item.source,
                "status": status,
                "message": message,
            }
        )


def _make_drafter(verifier: Any) -> Any:
    from agent.drafters import CompilerDrafter  # imported here: the loop's modules stay optional

    return CompilerDrafter(verifier.sandbox, verifier.device)


def _versions() -> dict[str, str]:
    import torch
    import triton

    return {"torch": torch.__version__, "triton": triton.__version__}


def _process(
    item: WorkItem,
    verifier: Any,
    drafter: Any,
    state: _BuildState,
    *,
    license: str,
    profile: bool,
    versions: dict[str, str],
) -> None:
    """Draft (if needed), dedup, verify, admit: one work item, never raising."""
    try:
        code = item.code
        if code is None:
            cand = drafter.draft(item.problem.source, os.path.abspath(item.problem.path))
            code = cand.get("code")
            if not code:
                state.log(item, "draft_failed", (cand.get("response") or "no code")[:500])
                return
        key = pair_key(item.problem.source, code)
        with state.lock:
            seen = key in state.keys
        if seen:
            state.log(
                item, "duplicate", "same normalised code as a pair already in the dataset", key
            )
            return
        verdict, timing = _check(item, code, verifier, profile)
        if verdict.status != "ok" or not verdict.correct:
            state.log(item, verdict.status, verdict.message)
            return
        record = PairRecord(
            entry_point="Model",
            python_code=item.problem.source,
            triton_code=code,
            repo_name=item.repo_name,
            module_name=item.module_name,
            license=license,
            key=key,
            source=item.source,
            verdict=verdict.status,
            trials=verdict.trials,
            atol=verdict.atol,
            rtol=verdict.rtol,
            policy=verdict.policy,
            mixed=verdict.mixed,
            device=timing.get("device") or ("cpu" if verifier.device == "cpu" else "cuda"),
            speedup=timing.get("speedup", item.speedup),
            speedup_compile=timing.get("speedup_compile", item.speedup_compile),
            timed_on=timing.get("timed_on", item.timed_on),
            provenance=item.provenance,
            versions=versions,
        )
        with state.lock:
            if key in state.keys:  # a parallel item got there first
                dup = True
            else:
                dup = False
                state.keys.add(key)
                state.records.append(record.to_dict())
        state.log(
            item, "duplicate" if dup else "ok", "" if not dup else "verified, but a duplicate", key
        )
    except TritonAgentError as e:
        state.log(item, "error", f"{type(e).__name__}: {e}")
    except Exception as e:  # a bug or broken infrastructure: say so, keep the other items going
        log.exception("dataset item %s failed", item.origin)
        state.log(item, "error", f"{type(e).__name__}: {e}")


def _check(item: WorkItem, code: str, verifier: Any, profile: bool) -> tuple[Any, dict[str, Any]]:
    """The fresh verdict, and on a GPU (with `profile`) the measured speedups
    (`tools.evaluate`: a profiler failure admits the pair on its verdict alone, untimed)."""
    ev = evaluate(item.problem, code, verifier=verifier, kernel_path="kernel.py", measure=profile)
    if not ev.speedups:
        return ev.verdict, {}
    device = (ev.profile or {}).get("device")
    return ev.verdict, {
        "device": device,
        "speedup": round(ev.speedups["eager"], 4) if "eager" in ev.speedups else None,
        "speedup_compile": round(ev.speedups["compile"], 4) if "compile" in ev.speedups else None,
        "timed_on": device,
    }


# -- stats ---------------------------------------------------------------------------------------
def stats(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Counts of a pairs file: by source, op family, device, and (from the ledger, when there is
    one) every work item's outcome."""
    records = read_pairs(path)
    ledger = read_jsonl(ledger_path(path))
    by_status: Counter[str] = Counter()
    if ledger:
        last: dict[tuple[str, str], str] = {}
        for e in ledger:  # a retried item's last outcome counts
            last[e["item"], e.get("origin", "")] = e["status"]
        by_status.update(last.values())
    else:
        by_status.update(r.verdict for r in records)
    speedups = sorted(r.speedup for r in records if r.speedup is not None)
    return {
        "file": str(path),
        "records": len(records),
        "problems": len({normalize_code(r.python_code) for r in records}),
        "by_source": dict(Counter(r.source for r in records).most_common()),
        "by_op_family": {
            f: n for f, n in Counter(classify_op(r.python_code) for r in records).most_common()
        },
        "by_status": dict(by_status.most_common()),
        "status_from": "ledger" if ledger else "records",
        "by_device": dict(Counter(r.device for r in records).most_common()),
        "timed": len(speedups),
        "median_speedup": speedups[len(speedups) // 2] if speedups else None,
        "schema_version": SCHEMA_VERSION,
    }


def plot_stats(summary: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Bar charts of the counts (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as e:
        raise BadInputError("--plot needs matplotlib: pip install matplotlib") from e
    panels = [
        ("source", summary["by_source"]),
        ("op family", summary["by_op_family"]),
        (f"outcome ({summary['status_from']})", summary["by_status"]),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (title, counts) in zip(axes, panels, strict=True):
        labels = list(counts) or ["(none)"]
        ax.bar(range(len(labels)), [counts.get(k, 0) for k in labels], color="#4c72b0")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_title(title)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("pairs" if "outcome" not in title else "work items")
    fig.suptitle(f"{summary['file']}: {summary['records']} verified pairs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
