"""The arithmetic a candidate's kernels compute in: fp32, tf32x3, bf16x3, tf32, bf16, ...

`arithmetic_of(source, verdict, cache_dir)` names them for `Verdict.arithmetic`. The verifier
calls it in its own process, after the verification; nothing the candidate says about itself
(comments, names, a `PRECISION` it reports) is read. Two readings, per launched kernel:

- **The compiled kernel** (`from_ttir`), where its TTIR is at hand (a GPU verification that kept
  the candidate job's Triton cache: `tools.orchestrate.profile`): every `tt.dot`'s operand types and
  `inputPrecision`, every narrowing `arith.truncf` / `tt.fp_to_fp`, every mantissa mask. Exact
  for what ran, however the code chose it.
- **The source** (`from_source`), otherwise: the `@triton.jit` kernels the audit saw launched and
  the jit functions they call, with each `tl.dot`'s `input_precision=` / `allow_tf32=` resolved
  through variables, constexpr parameters (the values the job recorded at launch, else every
  value a call site or a default can give), module constants and `if` branches on constexprs;
  casts to bf16/fp16/fp8 (`.to(...)`, `tl.cast`, narrow accumulators); mantissa masks
  (`& 0xFFFF0000`: bf16, `& 0xFFFFE000`: TF32). A precision the code computes at run time
  (an environment variable, a string built on the fly) reads `unknown`, never fp32.

A split is an operand rounded to a narrow format together with its residual (`x - hi`): bf16 or
TF32 rounding with a residual anywhere in the launched kernels makes their bf16 / TF32 products
`bf16x3` / `tf32x3` (this project's convolutions split in one kernel and multiply in another).
Loaded data is taken to be fp32 (a `tl.dot` on it with no precision is TF32, Triton's default):
the fp32 contract is about fp32 problems; the compiled reading sees the real operand types.

This is a description, not a check: what decides whether a kernel is accurate enough is the
per-element precision check at every input scale (docs/verification.md, "The fp32 contract").
The launch records, the audit's kernel names and the Triton cache come from the candidate's job:
they can only add to what the source shows of the kernels they name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from tools.checks.arithmetic_kinds import (
    ARITHMETICS,
    FP32_CONTRACT,
    Findings,
    from_cache_dir,
    from_ttir,
    ordered,
    outside_fp32_contract,
)
from tools.checks.arithmetic_source import scan_kernel
from tools.checks.source_model import SourceModel

log = logging.getLogger(__name__)

__all__ = [
    "ARITHMETICS",
    "FP32_CONTRACT",
    "Findings",
    "arithmetic_of",
    "cell",
    "count_kernels",
    "from_cache_dir",
    "from_source",
    "from_ttir",
    "ordered",
    "outside_fp32_contract",
    "summary",
]


def from_source(
    source: str,
    kernels: Iterable[str] | None = None,
    constexprs: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Findings]:
    """Kernel name -> its arithmetic, read from the candidate's source. `kernels`: the launched
    kernels (default: every jit function no other jit function calls); `constexprs`: per
    kernel, the constexpr values of each recorded launch (`KernelResources.constexprs`),
    which replace what the call sites could pass. {} for a file that does not parse."""
    try:
        model = SourceModel(source)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    roots = [k for k in dict.fromkeys(kernels or ()) if k in model.jit]
    if not roots:
        helpers = {
            name
            for name, calls in model.calls.items()
            if any(scope is not None and scope.name in model.jit for _, scope in calls)
        }
        roots = [k for k in model.jit if k not in helpers] or sorted(model.jit)
    out: dict[str, Findings] = {}
    for name in roots:
        found = Findings()
        for record in (constexprs or {}).get(name) or [{}]:
            env = {k: frozenset({v}) for k, v in record.items() if _hashable(v)}
            found.update(scan_kernel(model, name, env))
        out[name] = found
    return out


def arithmetic_of(source: str, verdict: Any, cache_dir: str | None = None) -> list[str]:
    """`Verdict.arithmetic`: the arithmetics of the kernels `verdict`'s job launched, each read
    from its compiled TTIR where `cache_dir` (the job's kept Triton cache) has it, else from
    `source` with the constexprs the job recorded. [] when no kernel is found. Never
    raises: a reading that fails is `["unknown"]` (it describes, the checks judge)."""
    try:
        return _arithmetic_of(source, verdict, cache_dir)
    except Exception:  # a description must not fail a verification
        log.exception("reading the arithmetic failed")
        return ["unknown"]


def _arithmetic_of(source: str, verdict: Any, cache_dir: str | None) -> list[str]:
    evidence = verdict.evidence
    launched = list(evidence.audit.kernels) if evidence.audit is not None else []
    records: dict[str, list[dict[str, Any]]] = {}
    for r in evidence.resources:
        records.setdefault(r.name, []).append(dict(r.constexprs))
    compiled = from_cache_dir(cache_dir)
    names = list(dict.fromkeys([*launched, *records]))
    static = from_source(source, names, records)
    total = Findings()
    for name in dict.fromkeys([*names, *static, *compiled]):
        found = compiled.get(name) or static.get(name)
        if found is not None:
            total.update(found)
    if not (static or compiled):
        return []
    return total.names()


def cell(names: Any, precision: str | None = "fp32") -> str:
    """A kernel's arithmetic in a report's cell: `fp32, bf16x3`, those the fp32 contract does
    not admit marked where the problem ran at fp32 (`precision`: at bf16/fp16 half precision is
    the problem's own arithmetic); `-` where none is known."""
    if not isinstance(names, list) or not names:
        return "-"
    outside = set(outside_fp32_contract(names)) if (precision or "fp32") == "fp32" else set()
    return ", ".join(f"{n} (outside the fp32 contract)" if n in outside else n for n in names)


def count_kernels(kernels: Iterable[tuple[str, list[str]]]) -> dict[str, Any]:
    """Kernels per arithmetic over (label, arithmetic) pairs, one per kernel (a kernel in fp32
    and bf16x3 counts under both), and the labels of those outside the fp32 contract."""
    counts: dict[str, int] = {}
    named = 0
    outside = []
    for label, names in kernels:
        if not names:
            continue
        named += 1
        for n in set(names):
            counts[n] = counts.get(n, 0) + 1
        if outside_fp32_contract(names):
            outside.append(label)
    return {
        "kernels": {n: counts[n] for n in ordered(counts)},
        "counted": named,
        "outside_fp32_contract": outside,
    }


def summary(counts: Any, what: str = "kernels") -> str | None:
    """`count_kernels`' result in one sentence (None where no kernel was counted)."""
    if not isinstance(counts, dict) or not counts.get("counted"):
        return None
    outside = counts.get("outside_fp32_contract") or []
    per = ", ".join(f"{k} {v}" for k, v in (counts.get("kernels") or {}).items())
    named = f"{len(outside)} ({', '.join(outside[:10])})" if outside else "none"
    # a bf16/fp16 bench: the contract is fp32's, and half precision the problem's own arithmetic
    contract = counts.get("fp32_contract")
    tail = (
        f"the fp32 contract {contract}"
        if contract
        else (f"outside the fp32 contract (docs/verification.md): {named}")
    )
    return (
        f"arithmetic of the {counts['counted']} {what} (one kernel can use several): {per}; {tail}"
    )


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
