"""Typed, JSON-serialisable results of the evaluation tools.

Every candidate gets exactly one `Verdict`; its `status` is one of `STATUSES` and its `evidence`
holds what a person or an LLM needs to act on it. `Verdict.feedback()` renders that evidence as
the text the refinement prompt shows the model.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 1

Status = Literal[
    "ok",  # compiled, correct on every trial, all work in Triton
    "bad_input",  # the candidate file breaks the contract (no ModelNew, no @triton.jit kernel)
    "syntax_error",  # the candidate does not parse
    "compile_error",  # import failed or the Triton compiler rejected a kernel
    "runtime_error",  # an exception while running the candidate
    "crash",  # the worker process died (segfault, os._exit, CUDA fault, memory limit)
    "timeout",  # the job ran past its time limit and was killed
    "mismatch",  # outputs have the right shape but wrong values (or NaN/Inf)
    "shape_mismatch",  # outputs have the wrong shape, dtype or count
    "cheat",  # deception: output obtained by breaking the rules, tampering or not computing it
    "policy",  # library compute (aten.convolution, cuBLAS) ran outside Triton under strict
    "resource",  # did not fit: out of host or GPU memory, also when run alone on its device
    "slower",  # correct, but slower than the baseline (profiling only)
]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]


@dataclass(kw_only=True)
class SourceError:
    """An error located in the candidate file."""

    kind: str
    """Exception class or compiler stage, e.g. `CompilationError`, `NameError`, `ptxas`."""
    message: str
    """The error text, trimmed to what is needed to fix it."""
    line: int | None = None
    """1-based line in the candidate file, when known."""
    code: str | None = None
    """The offending source line(s), when known."""


@dataclass(kw_only=True)
class MismatchReport:
    """How and where a candidate's output differs from the reference."""

    output_index: int
    trial: int
    shape: list[int]
    dtype: str
    atol: float
    rtol: float
    max_abs_err: float | None
    """inf where elements are NaN or infinite against finite expected values (`nan_count`,
    `inf_count`); JSON has no infinity: the MCP output carries null there, `strict_json` "inf"."""
    mean_abs_err: float | None
    max_rel_err: float | None
    bad_count: int
    numel: int
    first_bad: list[dict[str, Any]]
    """Up to 5 of `{"index": [...], "got": x, "expected": y}`."""
    nan_count: int = 0
    inf_count: int = 0
    expected_nan_count: int = 0
    hint: str = ""
    """A guess at the cause: masking, output never written, reduction, ..."""
    run: str = "first"
    """Which candidate run was wrong: `first` (on the previous trial's buffers refilled with
    this trial's values) or `second` (on fresh copies)."""
    fp64_checked: bool = False
    """Whether the elements outside the tolerance were also compared with an fp64 reference
    (fp32 outputs, where one could be computed)."""
    fp64_accepted: int = 0
    """Elements outside the tolerance not counted in `bad_count`: no farther from an fp64
    reference than the fp32 reference is (`tools.checks.compare.no_farther_from_fp64`)."""
    fp64_accepted_max_ref_err: float = 0.0
    """The largest |fp32 reference - fp64 reference| among those."""

    def summary(self) -> str:
        """The mismatch in one paragraph (a verdict's message, the feedback's evidence)."""
        where = ", ".join(
            f"{b['index']}: got {b['got']}, expected {b['expected']}" for b in self.first_bad[:3]
        )
        nan = f", {self.nan_count} NaN" if self.nan_count else ""
        inf = f", {self.inf_count} Inf" if self.inf_count else ""
        also = ""
        if self.fp64_checked:
            also = " and farther from an fp64 reference than PyTorch's fp32 value is"
            if self.fp64_accepted:
                also += (
                    f" (another {self.fp64_accepted} outside the tolerance were accepted as no "
                    f"farther; PyTorch's own error there up to {self.fp64_accepted_max_ref_err:.3g})"
                )
        return (
            f"output {self.output_index} (trial {self.trial}, {self.run} run): {self.bad_count} "
            f"of {self.numel} elements outside atol={self.atol:g}/rtol={self.rtol:g}{also}{nan}{inf}; "
            f"max abs err {self.max_abs_err:.3g}, mean abs err {self.mean_abs_err:.3g}, max rel "
            f"err {self.max_rel_err:.3g}. First bad: {where}. Hint: {self.hint}"
        )


@dataclass(kw_only=True)
class KernelResources:
    """What the real compiler says about one kernel (ahead-of-time compile for a CUDA target)."""

    name: str
    target: str
    registers: int | None = None
    spills_bytes: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    constexprs: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Audit:
    """What ran inside `ModelNew.forward`."""

    triton_launches: int = 0
    kernels: list[str] = field(default_factory=list)
    """Names of the Triton kernels launched."""
    torch_compute_ops: list[str] = field(default_factory=list)
    """PyTorch compute ops seen by the dispatch-mode audit (forbidden under `strict`)."""
    library_ops: list[str] = field(default_factory=list)
    """Library matmul/conv ops (allowed under the `allow-library` policy, reported as mixed)."""
    sandbox_violations: list[str] = field(default_factory=list)
    """Attempts to open sockets, spawn processes or write outside the job's directory."""
    mutated_inputs: list[int] = field(default_factory=list)
    aliased_outputs: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class Evidence:
    """Everything the verdict rests on. Fields are empty when the stage was not reached."""

    error: SourceError | None = None
    mismatch: MismatchReport | None = None
    audit: Audit | None = None
    resources: list[KernelResources] = field(default_factory=list)
    aot_errors: list[SourceError] = field(default_factory=list)
    expected_shapes: list[list[int]] = field(default_factory=list)
    got_shapes: list[list[int]] = field(default_factory=list)
    stderr_tail: str = ""
    """The last lines the worker printed, for crashes."""
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in the job's stages (import, runs, aot), for overhead accounting."""
    memory: dict[str, float] = field(default_factory=dict)
    """Peaks of the verification's jobs in MiB: `host_peak_mb`, `gpu_peak_mb` (the largest of
    the candidate's and the judge's), and the limits they ran under."""
    footprint: dict[str, int] = field(default_factory=dict)
    """The problem's own tensors in bytes: `input_bytes`, `output_bytes`, `param_bytes`."""
    fp64_accepted: int = 0
    """Elements over all compared runs outside the tolerance yet accepted by the judge's fp64
    rule (`tools.checks.compare.no_farther_from_fp64`); the timing job's freshness check then applies
    the rule too."""
    reference_error: dict[str, Any] = field(default_factory=dict)
    """How far the compared runs at the problem's own scale were from the reference, in the terms
    of KernelBench's check (`tools.orchestrate.reference.allclose_ratio`): `ratio` (the largest
    |reference - output| / (1 + |output|): KernelBench's `allclose` at atol = rtol = t accepts
    exactly when it is at most t), `max_abs`, `runs`; against the reference of
    `Verdict.reference_numerics`. Empty unless the verdict is `ok`."""
    statistics: list[dict[str, Any]] = field(default_factory=list)
    """A stochastic problem's trials (`Verdict.statistical`): per trial, per output, the runs of
    each side and each test's value and limit (`tools.checks.stochastic`)."""


@dataclass(kw_only=True)
class Verdict:
    """The one answer per candidate."""

    status: Status
    compiled: bool
    correct: bool
    message: str
    """One or two sentences a person reads first."""
    evidence: Evidence = field(default_factory=Evidence)
    device: str = "cpu"
    """`cpu` (Triton interpreter) or `cuda:N`."""
    precision: str = "fp32"
    """The dtype the problem ran at (`--precision`, `tools.core.problem_dtype`): `fp32` as written,
    or `bf16` / `fp16`, the model and its floating inputs cast (KernelBench's meaning)."""
    trials: int = 0
    atol: float | None = None
    rtol: float | None = None
    policy: str = "strict"
    reference_numerics: str = "exact"
    """What the reference computed in (`tools.orchestrate.reference.REFERENCE_NUMERICS`): `exact` (full fp32,
    TF32 off) or `pytorch-default` (PyTorch's defaults on a GPU, TF32 convolutions: a weaker `ok`,
    docs/verification.md, "Reference numerics")."""
    mixed: bool = False
    """True when library matmul/conv ops ran outside Triton (allowed under `allow-library`)."""
    statistical: bool = False
    """The problem is stochastic (its forward draws from torch's RNG) and was judged
    statistically: distributions over many runs, not values (`tools.checks.stochastic`)."""
    arithmetic: list[str] = field(default_factory=list)
    """The arithmetics the launched kernels compute in, from `tools.checks.arithmetic.ARITHMETICS`
    (`fp32`, `tf32x3`, `bf16x3`, `tf32`, `bf16`, ...): read by the verifier, in its own process,
    from the candidate's code and the kernels its job compiled (`tools.checks.arithmetic`). A
    description: the precision check is what decides whether they are accurate enough."""
    duration_s: float = 0.0
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return strict_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return _from_dict(cls, data)

    def feedback(self) -> str:
        """The evidence as text for a person or for the refinement prompt."""
        return render_feedback(self)


MAX_FEEDBACK_CHARS = 4000


def render_feedback(v: Verdict) -> str:
    """A verdict's evidence as text: what a person reads and what the LLM is shown (at most
    `MAX_FEEDBACK_CHARS`)."""
    lines = [f"Verdict: {v.status}. {v.message}"]
    ev = v.evidence
    if ev.error is not None and ev.error.message and ev.error.message.strip() not in v.message:
        where = f" (line {ev.error.line})" if ev.error.line else ""
        lines.append(f"Error{where}: {ev.error.kind}")
        if ev.error.code:
            lines.append(f"    {ev.error.code.strip()}")
        lines.append(_trim(ev.error.message, 2000))
    elif ev.error is not None and ev.error.code:
        lines.append(f"    line {ev.error.line}: {ev.error.code.strip()}")
    for e in ev.aot_errors[:2]:
        where = f" (line {e.line})" if e.line else ""
        lines.append(f"Real compiler error{where}:")
        if e.code:
            lines.append(f"    {e.code.strip()}")
        lines.append(_trim(e.message, 1500))
    if ev.mismatch is not None and ev.mismatch.summary() not in v.message:
        lines.append(ev.mismatch.summary())
    if ev.expected_shapes and v.status == "shape_mismatch":
        lines.append(f"Expected output shapes: {ev.expected_shapes}; got: {ev.got_shapes}")
    if ev.audit is not None:
        a = ev.audit
        if a.torch_compute_ops and v.status == "cheat":
            lines.append("PyTorch ops seen inside forward: " + ", ".join(a.torch_compute_ops))
        if a.kernels and v.status != "ok":
            lines.append(
                f"Triton kernels launched: {', '.join(a.kernels)} ({a.triton_launches} launches)"
            )
    if ev.resources:
        res = "; ".join(
            f"{r.name}: {r.registers} regs, {r.spills_bytes or 0} B spilled, {r.shared_bytes or 0} B shared"
            for r in ev.resources[:4]
        )
        lines.append(f"Compiled for {ev.resources[0].target}: {res}")
    if ev.stderr_tail and v.status in ("crash", "timeout", "runtime_error"):
        lines.append("Last output of the process:\n" + _trim(ev.stderr_tail, 1200))
    for n in ev.notes[:3]:
        lines.append(f"Note: {n}")
    return _trim("\n".join(lines), MAX_FEEDBACK_CHARS)


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2 - 20
    return text[:half] + "\n... [trimmed] ...\n" + text[-half:]


def strict_json(obj: Any, indent: int | None = None) -> str:
    """`obj` as one line of strict JSON (RFC 8259), which any parser accepts.

    Evidence carries values the candidate controls: error figures that are inf or NaN (Python's
    `json` would write the bare `Infinity` / `NaN` that strict parsers reject), dicts with tuple
    keys (`json` raises), bytes and arbitrary objects. Non-finite floats become the strings
    `"nan"`, `"inf"`, `"-inf"`; keys and other non-JSON values become their `str`."""
    return json.dumps(_jsonable(obj), allow_nan=False, indent=indent)


def _jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {_json_key(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(asdict(obj))
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", errors="backslashreplace")
    return str(obj)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _jsonable(key) if not math.isfinite(key) else repr(key)
    if isinstance(key, (bytes, bytearray)):
        return bytes(key).decode("utf-8", errors="backslashreplace")
    return str(key)


def _from_dict(cls: Any, data: Any) -> Any:
    """Rebuild nested dataclasses from `asdict` output."""
    if not dataclasses.is_dataclass(cls) or not isinstance(data, dict):
        return data
    hints = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    nested = {
        "error": SourceError,
        "mismatch": MismatchReport,
        "audit": Audit,
        "evidence": Evidence,
    }
    list_nested = {"resources": KernelResources, "aot_errors": SourceError}
    for key, value in data.items():
        if key not in hints:
            continue
        if key in nested and isinstance(value, dict):
            value = _from_dict(nested[key], value)
        elif key in list_nested and isinstance(value, list):
            value = [_from_dict(list_nested[key], v) for v in value]
        kwargs[key] = value
    return cls(**kwargs)
