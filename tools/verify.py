"""Verification: does a candidate compile, and compute what the PyTorch module computes?

Staged as load -> static check -> reference (cached) -> candidate run -> judgement; each stage is
its own function. The protocol (DESIGN.md, docs/verification.md):

- Model and ModelNew built under the same seed; Model's weights copied into ModelNew where the
  names and shapes match.
- `trials` fresh input sets from `get_inputs()` under distinct seeds; per-dtype tolerances.
- The candidate runs before *and* after the reference, on cloned inputs; inputs are checked for
  mutation, outputs for aliasing inputs; fresh allocations are poisoned.
- At least one Triton launch; PyTorch compute inside `forward` rejected under the strict policy.
- Candidate code runs in a sandbox job; the comparison happens here, out of its reach.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tools.compare import Tolerance, compare_outputs
from tools.errors import BadInputError, ProblemError, SandboxError, TooLargeForCPUError
from tools.problem import Problem, check_candidate_source, read_kernel, read_problem
from tools.results import Audit, Evidence, KernelResources, SourceError, Verdict
from tools.sandbox import JobOutcome, Limits, Sandbox

POLICIES = ("strict", "allow-library")


@dataclass(kw_only=True)
class VerifyOptions:
    trials: int = 5
    seed: int = 42
    tolerance: Tolerance = field(default_factory=Tolerance)
    policy: str = "strict"
    """`strict`: all compute in Triton. `allow-library`: library matmul/conv calls allowed, the
    verdict is marked mixed and lists them."""
    device: str = "auto"
    timeout_s: float = 180.0
    aot_target: str | None = "sm_90"
    """On CPU, also compile each launched kernel for this CUDA target (None to skip)."""
    allow_large: bool = False
    poison: bool = True
    memory_mb: int | None = 8192
    input_scales: tuple[float, ...] = ()
    """Generalisation check: one extra trial per factor with the floating-point inputs scaled by
    it (e.g. `(100.0,)` catches kernels that are right only inside randn's range, like a ReLU
    that also clamps at 6). Off by default: scaling shrinks the relative weight of `atol`, so
    sums that cancel can fail honest kernels."""

    jobs_per_gpu: int = 1
    """On CUDA: verification jobs running at once on each GPU (they only check correctness;
    timing jobs still have their GPU alone, `Sandbox.run(exclusive=True)`)."""

    generalize: bool = False
    """Generalisation check over sizes: after passing at the problem's own sizes, verify again
    with its integer size constants changed (`generalization_sizes`). Catches kernels with
    shapes baked in (the compiler drafter's, for one)."""

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise BadInputError(
                f"unknown policy {self.policy!r}; choose one of {', '.join(POLICIES)}"
            )
        if self.trials < 1:
            raise BadInputError("--trials must be at least 1")
        if self.jobs_per_gpu < 1:
            raise BadInputError("--jobs-per-gpu must be at least 1")
        if self.device not in ("auto", "cpu", "cuda"):
            raise BadInputError(f"unknown device {self.device!r}; choose auto, cpu or cuda")


def resolve_device(device: str) -> str:
    if device != "auto":
        if device == "cuda" and not _cuda_available():
            raise BadInputError("--device cuda requested but no CUDA GPU is visible")
        return device
    return "cuda" if _cuda_available() else "cpu"


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@dataclass(kw_only=True)
class Reference:
    """Inputs and reference outputs of one problem (CPU copies), cached per problem."""

    inputs: list[list[Any]]
    outputs: list[list[Any]]
    estimate: dict[str, Any]
    timings: dict[str, float]


class Verifier:
    """Verifies candidates; holds the sandbox and the reference cache. Thread-safe."""

    def __init__(self, options: VerifyOptions | None = None, sandbox: Sandbox | None = None):
        self.options = options or VerifyOptions()
        self.device = resolve_device(self.options.device)
        limits = Limits(timeout_s=self.options.timeout_s, memory_mb=self.options.memory_mb)
        self.sandbox = sandbox or Sandbox(
            device=self.device, limits=limits, slots_per_gpu=self.options.jobs_per_gpu
        )
        self._refs: dict[tuple, Reference] = {}
        self._lock = threading.Lock()

    # -- stage: reference -------------------------------------------------------------------
    def reference(self, problem: Problem) -> Reference:
        key = (
            problem.digest,
            self.options.trials,
            self.options.seed,
            self.device,
            tuple(self.options.input_scales),
        )
        with self._lock:
            if key in self._refs:
                return self._refs[key]
        out = self.sandbox.run(
            "tools.worker:reference_job",
            problem.source,
            os.path.abspath(problem.path),
            trials=self.options.trials,
            seed=self.options.seed,
            check_size=not self.options.allow_large,
            input_scales=tuple(self.options.input_scales),
            timeout=max(self.options.timeout_s, 60.0),
        )
        if out.kind == "timeout":
            raise ProblemError(
                f"{problem.path}: the reference Model did not finish in {out.error}; "
                "reduce the sizes or raise --timeout"
            )
        if out.kind == "crash":
            raise ProblemError(
                f"{problem.path}: the reference crashed: {out.error}\n{out.stderr_tail}"
            )
        if out.kind == "error":
            raise SandboxError(f"internal error while loading the problem:\n{out.error}")
        data = out.value
        if "error" in data:
            cls = TooLargeForCPUError if data.get("too_large") else ProblemError
            raise cls(f"{problem.path}: {data['error']}")
        ref = Reference(
            inputs=data["inputs"],
            outputs=data["outputs"],
            estimate=data.get("estimate", {}),
            timings=data.get("timings", {}),
        )
        with self._lock:
            self._refs[key] = ref
        return ref

    # -- the whole protocol -----------------------------------------------------------------
    def verify(
        self,
        problem: Problem,
        kernel_source: str,
        kernel_path: str = "candidate.py",
        *,
        triton_cache_out: str | None = None,
    ) -> Verdict:
        """The verification protocol. `triton_cache_out`: keep the candidate job's compiled
        kernels there (its timing job starts from them instead of compiling again)."""
        start = time.monotonic()
        verdict = self._verify(problem, kernel_source, kernel_path, triton_cache_out)
        if verdict.correct and self.options.generalize:
            verdict = self._generalize(problem, kernel_source, kernel_path, verdict)
        verdict.duration_s = round(time.monotonic() - start, 3)
        verdict.device = "cpu" if self.device == "cpu" else "cuda"
        verdict.policy = self.options.policy
        return verdict

    def _generalize(self, problem: Problem, source: str, path: str, verdict: Verdict) -> Verdict:
        sizes = generalization_sizes(problem)
        if not sizes:
            verdict.evidence.notes.append(
                "generalisation check: the problem has no integer size constants"
            )
            return verdict
        variant = problem.with_sizes(**sizes)
        shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
        try:
            other = self._verify(variant, source, path)
        except ProblemError as exc:  # the reference itself does not accept those sizes
            verdict.evidence.notes.append(
                f"generalisation check skipped: at {shown} the problem fails: {exc}"
            )
            return verdict
        if other.correct:
            verdict.evidence.notes.append(f"generalisation check passed at {shown}")
            return verdict
        other.message = f"correct at the problem's sizes, but not at {shown}: {other.message}"
        other.evidence.notes.append(f"generalisation check failed at {shown}")
        return other

    def _verify(
        self,
        problem: Problem,
        kernel_source: str,
        kernel_path: str,
        triton_cache_out: str | None = None,
    ) -> Verdict:
        check = check_candidate_source(kernel_source, kernel_path)
        if not check.ok:
            err = SourceError(
                kind=check.status, message=check.message, line=check.line, code=check.code
            )
            return Verdict(
                status=check.status,
                compiled=False,
                correct=False,
                message=check.message,
                evidence=Evidence(error=err),
            )  # type: ignore[arg-type]
        ref = self.reference(problem)
        outcome = self.sandbox.run(
            "tools.worker:candidate_job",
            kernel_source,
            os.path.basename(kernel_path) or "candidate.py",
            problem.source,
            os.path.abspath(problem.path),
            ref.inputs,
            seed=self.options.seed,
            poison=self.options.poison,
            aot_target=self.options.aot_target if self.device == "cpu" else None,
            triton_cache_out=triton_cache_out,
        )
        return judge(outcome, ref, self.options)


def generalization_sizes(problem: Problem) -> dict[str, int]:
    """Other values for the problem's integer size constants: about half, plus one (so powers of
    two become odd and every size changes). Constants of 1 stay (often a flag or a kernel size)."""
    return {
        k: v // 2 + 1 for k, v in problem.size_constants.items() if isinstance(v, int) and v >= 2
    }


def judge(outcome: JobOutcome, ref: Reference, options: VerifyOptions) -> Verdict:
    """Turn a candidate job's outcome into the verdict. Pure: no I/O."""
    if outcome.kind == "timeout":
        return Verdict(
            status="timeout",
            compiled=False,
            correct=False,
            message=f"the candidate did not finish within {options.timeout_s:.0f} s "
            "(infinite loop, deadlock or a runaway compile); the job was killed",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )
    if outcome.kind == "crash":
        sig = f" ({outcome.signal_name})" if outcome.signal_name else ""
        return Verdict(
            status="crash",
            compiled=False,
            correct=False,
            message=f"the candidate's process died{sig}: {outcome.error}. Typical causes: an "
            "out-of-bounds load/store without a mask, os._exit, exhausting memory",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )
    if outcome.kind == "error" or not isinstance(outcome.value, dict):
        # The job function itself raised. It shares its process with the candidate, which can
        # break anything in it (patch torch.Tensor.clone, delete harness globals), so this is the
        # candidate's fault until shown otherwise; the traceback says where.
        tail = (outcome.error or "no result")[-3000:]
        return Verdict(
            status="crash",
            compiled=False,
            correct=False,
            message="the candidate's job failed outside the candidate's own code (did it patch "
            f"torch or the harness?): {tail.strip().splitlines()[-1] if tail.strip() else ''}",
            evidence=Evidence(stderr_tail=tail),
        )
    try:
        return _judge_reply(outcome.value, ref, options)
    except Exception as exc:  # noqa: BLE001 - a reply the candidate forged or broke
        return Verdict(
            status="crash",
            compiled=False,
            correct=False,
            message=f"the candidate's job sent a malformed reply ({type(exc).__name__}: {exc}); "
            "it was not produced by the harness as written",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )


def _judge_reply(data: dict[str, Any], ref: Reference, options: VerifyOptions) -> Verdict:
    tol = options.tolerance
    violations = data.get("violations") or []
    audit = Audit(**data["audit"]) if data.get("audit") else Audit()
    audit.sandbox_violations = list(violations)
    evidence = Evidence(
        audit=audit, notes=list(data.get("notes", [])), timings=dict(data.get("timings", {}))
    )
    evidence.resources = [KernelResources(**r) for r in data.get("resources", [])]
    evidence.aot_errors = [SourceError(**e) for e in data.get("aot_errors", [])]
    evidence.expected_shapes = [list(o.shape) for o in ref.outputs[0] if hasattr(o, "shape")]
    compiled = data.get("stage") in ("run", "done") and audit.triton_launches > 0
    if violations:
        return Verdict(
            status="cheat",
            compiled=compiled,
            correct=False,
            message=f"the candidate broke the sandbox rules: {violations[0]}",
            evidence=evidence,
        )
    if "error" in data:
        err = SourceError(**data["error"])
        evidence.error = err
        status = data.get("error_class", "runtime_error")
        where = f" at line {err.line}" if err.line else ""
        stage = {
            "compile_error": "failed to compile",
            "runtime_error": "raised",
            "bad_input": "is unusable",
        }.get(status, "failed")
        first_line = _headline(err)
        if data.get("cuda_fault"):
            return Verdict(
                status="crash",
                compiled=True,
                correct=False,
                message=f"the candidate's kernel faulted on the GPU{where}: CUDA error: "
                f"{data['cuda_fault']}. Typical causes: an out-of-bounds load/store without a "
                "mask, a wrong stride or offset, a grid larger than the data",
                evidence=evidence,
            )
        return Verdict(
            status=status,
            compiled=status not in ("compile_error", "bad_input"),
            correct=False,
            message=f"the candidate {stage}{where}: {first_line}",
            evidence=evidence,
        )
    if audit.triton_launches == 0:
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message="no Triton kernel was launched during forward: the work must be done in Triton",
            evidence=evidence,
        )
    idle = data.get("idle_runs") or []
    if idle:
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message=f"forward launched no Triton kernel in {len(idle)} of its calls "
            f"({idle[0]}): every call must compute its output (a cached or memoised "
            "result is not a kernel)",
            evidence=evidence,
        )
    if audit.torch_compute_ops:
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message="PyTorch computed inside forward ("
            + ", ".join(audit.torch_compute_ops[:6])
            + "): under the strict policy all compute must happen in Triton kernels",
            evidence=evidence,
        )
    mixed = bool(audit.library_ops)
    if mixed and options.policy == "strict":
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message="library calls ran outside Triton ("
            + ", ".join(audit.library_ops)
            + "); rejected under the strict policy (use --policy allow-library to accept mixed kernels)",
            evidence=evidence,
        )
    # Cheats first (above), then what the real compiler says: a kernel that also falls back to
    # PyTorch is a cheat whether or not it compiles for the GPU.
    if evidence.aot_errors:
        e = evidence.aot_errors[0]
        where = f" at line {e.line}" if e.line else ""
        return Verdict(
            status="compile_error",
            compiled=False,
            correct=False,
            message=f"the kernel runs in the interpreter but the real compiler ({options.aot_target}) "
            f"rejects it{where}: {e.message.strip().splitlines()[-1] if e.message.strip() else e.kind}",
            evidence=evidence,
        )
    if audit.aliased_outputs:
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message=f"output {audit.aliased_outputs[0]} aliases an input (it returns or views "
            "the input instead of computing a new tensor)",
            evidence=evidence,
        )
    if audit.mutated_inputs:
        return Verdict(
            status="mismatch",
            compiled=True,
            correct=False,
            message=f"the candidate modified input {audit.mutated_inputs[0]} in place; the "
            "reference does not. Write results to a new output tensor",
            evidence=evidence,
        )
    outputs = data["outputs"]
    n_plain = len(ref.outputs) - len(options.input_scales)
    if options.input_scales:
        evidence.notes.append(
            f"trials {n_plain}..{len(ref.outputs) - 1} are the generalisation check (inputs scaled by "
            + ", ".join(f"{x:g}" for x in options.input_scales)
            + ")"
        )
    evidence.got_shapes = (
        [list(o.shape) for o in outputs[0][0] if hasattr(o, "shape")] if outputs else []
    )
    for trial, (pair, expected) in enumerate(zip(outputs, ref.outputs)):
        for run, got in zip(("first", "second"), pair):
            diff = compare_outputs(got, expected, tol, trial=trial, run=run)
            if diff.kind == "shape":
                return Verdict(
                    status="shape_mismatch",
                    compiled=True,
                    correct=False,
                    message=diff.message,
                    evidence=evidence,
                    trials=trial + 1,
                )
            if diff.kind == "value":
                evidence.mismatch = diff.report
                return Verdict(
                    status="mismatch",
                    compiled=True,
                    correct=False,
                    message=diff.message,
                    evidence=evidence,
                    trials=trial + 1,
                    atol=diff.report.atol if diff.report else None,
                    rtol=diff.report.rtol if diff.report else None,
                )
    dt = ref.outputs[0][0].dtype if ref.outputs and ref.outputs[0] else None
    atol, rtol = tol.for_dtype(dt) if dt is not None else (None, None)
    note = " (mixed: " + ", ".join(audit.library_ops) + " ran as library calls)" if mixed else ""
    return Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message=f"correct on {len(outputs)} trials ({audit.triton_launches} Triton launches, "
        f"kernels: {', '.join(audit.kernels)}){note}",
        evidence=evidence,
        trials=len(outputs),
        atol=atol,
        rtol=rtol,
        mixed=mixed,
    )


def _headline(err: SourceError) -> str:
    """The line of an error message that says what went wrong (not notes in parentheses)."""
    lines = [ln.strip() for ln in err.message.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if not ln.startswith("(") and not ln.startswith("^"):
            return ln[:300]
    return err.kind


def verify(
    problem: str | Problem,
    kernel: str,
    *,
    options: VerifyOptions | None = None,
    verifier: Verifier | None = None,
    kernel_is_source: bool = False,
    **kw: Any,
) -> Verdict:
    """Verify one candidate. `problem` is a path or a Problem; `kernel` a path (or source text
    with `kernel_is_source=True`). Keyword arguments are VerifyOptions fields."""
    prob = problem if isinstance(problem, Problem) else read_problem(problem)
    if kernel_is_source:
        source, kpath = kernel, "candidate.py"
    else:
        source, kpath = read_kernel(kernel), kernel
    v = verifier or Verifier(options or VerifyOptions(**kw))
    return v.verify(prob, source, kpath)
