"""The dataset's record (`PairRecord`, KernelBook's columns plus provenance), its keys and op
families, and the JSONL files it lives in."""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tools.core import pyast
from tools.core.errors import BadInputError
from tools.core.results import strict_json

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
    synthetic: bool = False
    """Whether the PyTorch program was written by a tool rather than taken from a file as given
    (KernelBook marks its LLM-written modules so); False for problems, modules and runs."""
    original_triton_code: str = ""
    """The kernel before any clean-up (KernelBook: Inductor's raw output). Here the verified file
    is kept exactly as generated, so it is `triton_code` (filled in when left empty)."""
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

    def __post_init__(self) -> None:
        if not self.original_triton_code:
            self.original_triton_code = self.triton_code

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
        tree = pyast.parse(code)
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
        tree = pyast.parse(python_code)
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
