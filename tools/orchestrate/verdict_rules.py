"""The rules of a verdict: what a verification's two jobs produced (`TrialRun`) -> `Verdict`.
Pure: no I/O, no jobs (`tools.orchestrate.verify` runs them; `tools.job.judge` is the judge's job process).
Cheats are ruled on first, then the compiler's errors, then the comparisons."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.checks.fp64_rule import ORDER_FACTOR
from tools.checks.freshness import ALLOWANCE_FACTOR
from tools.checks.launch_times import repeated_work
from tools.core.errors import ProblemError
from tools.core.results import (
    Audit,
    Evidence,
    KernelResources,
    MismatchReport,
    SourceError,
    Verdict,
)
from tools.orchestrate.reference import Reference
from tools.orchestrate.verify_options import VerifyOptions
from tools.sandboxing.sandbox import JobOutcome


@dataclass(kw_only=True)
class TrialRun:
    """What one verification's two jobs produced, for `judge`."""

    outcome: JobOutcome | None = None
    """How the candidate's job ended (its evidence in `value`)."""
    comparisons: list[tuple[int, str, Any]] = field(default_factory=list)
    """(trial, run, the judge's finding) for every run the judge compared."""
    runs: list[list[str]] = field(default_factory=list)
    """The runs of each trial the parent sends: two for a trial, one for an unannounced one
    (empty: two a trial)."""
    expected_trials: int = 0
    scales: list[float] = field(default_factory=list)
    """The factor each trial's floating-point inputs were scaled by (1.0: the problem's own;
    empty: all 1.0), in the order of `runs`."""
    expected: list[dict[str, Any]] = field(default_factory=list)
    got_shapes: list[Any] = field(default_factory=list)
    judge_failure: str | None = None
    judge_died_comparing: bool = False
    forged: str | None = None
    candidate_stopped: bool = False
    """The candidate's job was told to stop (it must not be told twice)."""
    out_of_memory: bool = False
    """Some job ran out of memory (a reason to retry alone on a shared GPU)."""
    resource_failure: str | None = None
    """Why the problem did not fit (judge out of memory, a job killed at its host limit)."""
    limits_mb: int | None = None
    memory: list[dict[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def peaks(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for m in self.memory:
            for k in ("host_peak_mb", "gpu_peak_mb"):
                if isinstance(m.get(k), (int, float)):
                    out[k] = max(out.get(k, 0.0), float(m[k]))
        if self.limits_mb:
            out["host_limit_mb"] = float(self.limits_mb)
        return out


def resource_verdict(message: str, memory: dict[str, float], footprint: dict[str, int]) -> Verdict:
    return Verdict(
        status="resource",
        compiled=False,
        correct=False,
        message=message,
        evidence=Evidence(memory=memory, footprint=footprint),
    )


def judge(run: TrialRun, ref: Reference, options: VerifyOptions) -> Verdict:
    """Turn what a verification's two jobs produced into the verdict. Pure: no I/O."""
    verdict = _judge(run, ref, options)
    verdict.evidence.memory = {**run.peaks(), **verdict.evidence.memory}
    verdict.evidence.footprint = dict(ref.footprint)
    verdict.evidence.notes.extend(run.notes)
    if verdict.correct:  # its error against the reference, in KernelBench's terms (issue 36)
        verdict.evidence.reference_error = _reference_error(run)
    return verdict


def _judge(run: TrialRun, ref: Reference, options: VerifyOptions) -> Verdict:
    outcome = run.outcome or JobOutcome(kind="crash", error="the candidate's job never ended")
    if run.resource_failure and not (
        isinstance(outcome.value, dict) and outcome.value.get("violations")
    ):
        # Out of memory in either job (on a shared GPU: also when retried alone), or the judge
        # killed at its host limit. (A candidate's job killed at its host limit is a crash:
        # its inputs and outputs are on the GPU, so the bloat is its own.)
        peaks = run.peaks()
        shown = ", ".join(f"{k} {v:.0f}" for k, v in peaks.items())
        return resource_verdict(
            f"{run.resource_failure}. The problem's tensors take {ref.footprint_mb:.0f} MB a "
            f"trial; peaks (MB): {shown or 'unknown'}. Raise --memory-mb (host memory) or run "
            "with fewer jobs per GPU",
            peaks,
            dict(ref.footprint),
        )
    if run.forged:
        return Verdict(
            status="cheat",
            compiled=False,
            correct=False,
            message=f"{run.forged}: the harness's messages were forged or tampered with",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )
    if run.judge_died_comparing:
        return Verdict(
            status="crash",
            compiled=True,
            correct=False,
            message=f"the candidate's outputs could not be read back: {run.judge_failure}",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )
    if run.judge_failure:
        raise ProblemError(run.judge_failure)
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
        return _judge_reply(outcome.value, run, ref, options)
    except Exception as exc:  # noqa: BLE001 - a reply the candidate forged or broke
        return Verdict(
            status="crash",
            compiled=False,
            correct=False,
            message=f"the candidate's job sent a malformed reply ({type(exc).__name__}: {exc}); "
            "it was not produced by the harness as written",
            evidence=Evidence(stderr_tail=outcome.stderr_tail),
        )


def _judge_reply(
    data: dict[str, Any], run: TrialRun, ref: Reference, options: VerifyOptions
) -> Verdict:
    """The candidate job's reply (`data`: its evidence) and the judge's comparisons -> the
    verdict. The rules in their order, the first that applies deciding: the sandbox's rules,
    a library call refused under the strict policy, the candidate's error, the cheats the
    audit saw, the real compiler, inputs changed or aliased, the comparisons; else ok."""
    audit, evidence = _reply_evidence(data, ref)
    compiled = data.get("stage") in ("run", "done") and audit.triton_launches > 0
    return (
        _sandbox_rule(data, evidence, compiled)
        or _refused_library_rule(data, audit, evidence, compiled, options)
        or _error_rule(data, evidence)
        or _audit_rule(data, audit, evidence, options)
        or _compiler_rule(evidence, options)
        or _inputs_rule(audit, evidence)
        or _comparison_rule(run, evidence)
        or _ok_verdict(run, ref, audit, evidence, options)
    )


def _reply_evidence(data: dict[str, Any], ref: Reference) -> tuple[Audit, Evidence]:
    """The audit and the evidence the reply carries (the sandbox's violations in the audit)."""
    audit = Audit(**data["audit"]) if data.get("audit") else Audit()
    audit.sandbox_violations = list(data.get("violations") or [])
    evidence = Evidence(
        audit=audit, notes=list(data.get("notes", [])), timings=dict(data.get("timings", {}))
    )
    evidence.resources = [KernelResources(**r) for r in data.get("resources", [])]
    evidence.aot_errors = [SourceError(**e) for e in data.get("aot_errors", [])]
    evidence.expected_shapes = [list(e["shape"]) for e in ref.expected if "shape" in e]
    return audit, evidence


def _sandbox_rule(data: dict[str, Any], evidence: Evidence, compiled: bool) -> Verdict | None:
    """A refusal by the guard or tampering the job found: a cheat."""
    violations = data.get("violations") or []
    if not violations:
        return None
    return Verdict(
        status="cheat",
        compiled=compiled,
        correct=False,
        message=f"the candidate broke the sandbox rules: {violations[0]}",
        evidence=evidence,
    )


def _refused_library_rule(
    data: dict[str, Any], audit: Audit, evidence: Evidence, compiled: bool, options: VerifyOptions
) -> Verdict | None:
    """A library GEMM/convolution reached during forward (through the audit or below it: a
    redispatch) was refused, out of the candidate's reach. Under the strict policy that is the
    verdict, whatever the candidate did after the refusal (raised, or fell back)."""
    refused_library = [str(op)[:200] for op in data.get("refused_library") or []]
    if not refused_library or options.policy != "strict":
        return None
    if "error" in data:
        evidence.error = SourceError(**data["error"])
    compute = [op for op in audit.torch_compute_ops if op not in refused_library]
    if compute:
        return _torch_compute_verdict(compute, evidence)
    return Verdict(
        status="policy",
        compiled=compiled,
        correct=False,
        message="library calls ran outside Triton ("
        + ", ".join(refused_library)
        + ": called in forward and refused there); rejected under the strict policy (use "
        "--policy allow-library to accept mixed kernels)",
        evidence=evidence,
    )


def _error_rule(data: dict[str, Any], evidence: Evidence) -> Verdict | None:
    """The candidate's error (at import, in the constructor or in forward): its class from the
    job (`error_class`), or a crash where a kernel faulted on the GPU."""
    if "error" not in data:
        return None
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


def _audit_rule(
    data: dict[str, Any], audit: Audit, evidence: Evidence, options: VerifyOptions
) -> Verdict | None:
    """What the audit saw of forward's work: no Triton launch (in any call, or in some), other
    work on repeated inputs, PyTorch compute; library calls under the strict policy."""
    if audit.triton_launches == 0:
        return _cheat(
            "no Triton kernel was launched during forward: the work must be done in Triton",
            evidence,
        )
    idle = data.get("idle_runs") or []
    if idle:
        return _cheat(
            f"forward launched no Triton kernel in {len(idle)} of its calls "
            f"({idle[0]}): every call must compute its output (a cached or memoised "
            "result is not a kernel)",
            evidence,
        )
    repeated = repeated_work(data, evidence.notes)  # traces, counts, device times
    if repeated:
        return _cheat(
            f"forward did different work on repeated inputs in {len(repeated)} call(s) "
            f"({repeated[0]}): the work a forward does may not depend on whether its inputs "
            "were seen before (a remembered result is not a kernel)",
            evidence,
        )
    if audit.torch_compute_ops:
        return _torch_compute_verdict(audit.torch_compute_ops, evidence)
    if audit.library_ops and options.policy == "strict":
        return Verdict(
            status="policy",
            compiled=True,
            correct=False,
            message="library calls ran outside Triton ("
            + ", ".join(audit.library_ops)
            + "); rejected under the strict policy (use --policy allow-library to accept mixed kernels)",
            evidence=evidence,
        )
    return None


def _compiler_rule(evidence: Evidence, options: VerifyOptions) -> Verdict | None:
    """Cheats first (above), then what the real compiler says: a kernel that also falls back to
    PyTorch is a cheat whether or not it compiles for the GPU."""
    if not evidence.aot_errors:
        return None
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


def _inputs_rule(audit: Audit, evidence: Evidence) -> Verdict | None:
    """An output that aliases an input (a cheat), an input modified in place (a mismatch)."""
    if audit.aliased_outputs:
        return _cheat(
            f"output {audit.aliased_outputs[0]} aliases an input (it returns or views "
            "the input instead of computing a new tensor)",
            evidence,
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
    return None


def _comparison_rule(run: TrialRun, evidence: Evidence) -> Verdict | None:
    """The first run the judge did not find ok, or fewer runs compared than the parent asked
    for (the protocol cut short); None when every run compared ok. The scale trials and the
    shapes the candidate returned go into the evidence first."""
    scaled = [(t, s) for t, s in enumerate(run.scales) if s != 1.0]
    if scaled:
        evidence.notes.append(
            "scale trials (the floating-point inputs of get_inputs() scaled, the reference run "
            "on the same inputs): " + ", ".join(f"trial {t} at {scale_label(s)}" for t, s in scaled)
        )
    evidence.got_shapes = [list(s) for s in run.got_shapes if isinstance(s, list)]
    for trial, which, diff in run.comparisons:
        kind = diff.get("kind") if isinstance(diff, dict) else None
        if kind != "ok":
            return _failed_run(run, evidence, trial, which, diff)
    done = {(t, w) for t, w, d in run.comparisons if isinstance(d, dict) and d.get("kind") == "ok"}
    expected_runs = sum(map(len, run.runs)) or 2 * run.expected_trials
    if len(done) != expected_runs:
        # Every trial's two runs must have been compared; fewer means the job stopped early
        # without an error the harness reported (a forged end, a swallowed exit).
        return _cheat(
            f"only {len(done)} of {expected_runs} runs reached the comparison, "
            "with no error reported: the job's protocol was cut short",
            evidence,
        )
    return None


def _failed_run(run: TrialRun, evidence: Evidence, trial: int, which: str, diff: Any) -> Verdict:
    """The verdict of a run the judge did not find ok: its outputs' shapes, their values (with
    the mismatch report), or outputs it could not compare (a crash)."""
    kind = diff.get("kind") if isinstance(diff, dict) else None
    message = str(diff.get("message", "")) if isinstance(diff, dict) else ""
    message = _at_scale(message, run, trial)
    if kind == "shape":
        return Verdict(
            status="shape_mismatch",
            compiled=True,
            correct=False,
            message=message,
            evidence=evidence,
            trials=trial + 1,
        )
    if kind == "value":
        report = MismatchReport(**diff["report"]) if diff.get("report") else None
        evidence.mismatch = report
        return Verdict(
            status="mismatch",
            compiled=True,
            correct=False,
            message=message,
            evidence=evidence,
            trials=trial + 1,
            atol=report.atol if report else None,
            rtol=report.rtol if report else None,
        )
    return Verdict(
        status="crash",
        compiled=True,
        correct=False,
        message=message or f"the judge could not compare trial {trial}'s {which} run",
        evidence=evidence,
        trials=trial + 1,
    )


def _ok_verdict(
    run: TrialRun, ref: Reference, audit: Audit, evidence: Evidence, options: VerifyOptions
) -> Verdict:
    """Correct: the tolerance of the outputs' dtype, what the fp64 rule accepted, the trials
    the precision check could not cover, and library calls where the policy allowed them."""
    import torch

    dt_name = ref.expected[0].get("dtype") if ref.expected else None
    dt = getattr(torch, str(dt_name).replace("torch.", ""), None) if dt_name else None
    atol, rtol = options.tolerance.for_dtype(dt) if dt is not None else (None, None)
    mixed = bool(audit.library_ops)
    note = " (mixed: " + ", ".join(audit.library_ops) + " ran as library calls)" if mixed else ""
    evidence.fp64_accepted = _fp64_count(run.comparisons)
    # Trials the judge's precision check could not cover (its fp64 runs' time budget spent).
    skipped = [d.get("precision_skipped") for _, _, d in run.comparisons if isinstance(d, dict)]
    for reason in dict.fromkeys(r for r in skipped if isinstance(r, str) and r):
        evidence.notes.append(reason[:300])
    return Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message=f"correct on {run.expected_trials} trials{scaled_words(run)} "
        f"({audit.triton_launches} Triton launches, "
        f"kernels: {', '.join(audit.kernels)}){note}{_fp64_note(run.comparisons)}",
        evidence=evidence,
        trials=run.expected_trials,
        atol=atol,
        rtol=rtol,
        mixed=mixed,
    )


def _cheat(message: str, evidence: Evidence) -> Verdict:
    """A cheat found in forward's work (it compiled: a Triton kernel ran)."""
    return Verdict(status="cheat", compiled=True, correct=False, message=message, evidence=evidence)


def scale_label(scale: float) -> str:
    """How a scale trial is named in verdicts: "inputs x100"."""
    return f"inputs x{scale:g}"


def _at_scale(message: str, run: TrialRun, trial: int) -> str:
    """A failure's message, saying at which scale it failed where that was a scale trial (the
    trials at the problem's own scale, which come first, passed)."""
    scale = run.scales[trial] if 0 <= trial < len(run.scales) else 1.0
    if scale == 1.0:
        return message
    return (
        f"wrong at {scale_label(scale)} (get_inputs()'s floating-point tensors times {scale:g}, "
        "the reference run on the same inputs), though correct on every trial at the problem's "
        f"own scale: {message}. Correct means correct at every scale a user may feed; look for "
        "what depends on the inputs' range (a clamp, an overflow without its guard, an "
        "approximation fitted to randn's range, lower-precision arithmetic whose error "
        "atol hid at the problem's scale)"
    )


def scaled_words(run: TrialRun) -> str:
    """The words an ok verdict adds for its scale trials (", 1 of them at inputs x100")."""
    runs = run.runs or [["first", "second"]] * len(run.scales)
    scales = [s for s, r in zip(run.scales, runs) if s != 1.0 and len(r) > 1]
    if not scales:
        return ""
    labels = ", ".join(scale_label(s) for s in dict.fromkeys(scales))
    return f", {len(scales)} of them at {labels}"


def _torch_compute_verdict(ops: list[str], evidence: Evidence) -> Verdict:
    return Verdict(
        status="cheat",
        compiled=True,
        correct=False,
        message="PyTorch computed inside forward ("
        + ", ".join(ops[:6])
        + "): under the strict policy all compute must happen in Triton kernels",
        evidence=evidence,
    )


def _fp64_count(comparisons: list[tuple[int, str, Any]]) -> int:
    """Elements the fp64 rule accepted over all compared runs."""
    return sum(
        d["fp64_accepted"]
        for _, _, d in comparisons
        if isinstance(d, dict) and isinstance(d.get("fp64_accepted"), int)
    )


def _reference_error(run: TrialRun) -> dict[str, Any]:
    """The largest error against the reference over the compared runs at the problem's own
    scale (`tools.orchestrate.reference.allclose_ratio`, measured by the judge): what KernelBench's check,
    which has no scale trials, would see. Empty where no run measured it."""
    ratio, max_abs, runs = 0.0, 0.0, 0
    for trial, _, diff in run.comparisons:
        scale = run.scales[trial] if 0 <= trial < len(run.scales) else 1.0
        got = diff.get("reference_error") if isinstance(diff, dict) else None
        if scale != 1.0 or not isinstance(got, dict):
            continue
        r, a = got.get("ratio"), got.get("max_abs")
        if isinstance(r, (int, float)) and isinstance(a, (int, float)):
            ratio, max_abs, runs = max(ratio, float(r)), max(max_abs, float(a)), runs + 1
    return {"ratio": ratio, "max_abs": max_abs, "runs": runs} if runs else {}


def _fp64_note(comparisons: list[tuple[int, str, Any]]) -> str:
    """What the fp64 rule accepted over all compared runs (`tools.checks.compare.no_farther_from_fp64`),
    as a sentence for an `ok` verdict; empty where it accepted nothing."""
    count, runs, worst, draws = 0, 0, 0.0, 0
    for _, _, diff in comparisons:
        n = diff.get("fp64_accepted") if isinstance(diff, dict) else None
        err = diff.get("fp64_accepted_max_ref_err") if isinstance(diff, dict) else None
        if isinstance(n, int) and n > 0 and isinstance(err, (int, float)):
            count, runs, worst = count + n, runs + 1, max(worst, float(err))
            d = diff.get("fp64_draws")
            draws = max(draws, d if isinstance(d, int) else 1)
    if not count:
        return ""
    own = (
        "PyTorch's own fp32 value"
        if draws <= 1
        else f"{ALLOWANCE_FACTOR:g}x the larger of PyTorch's largest fp32 error over {draws} "
        f"draws (the inputs and {draws - 1} copies an fp32 ulp away) and {ORDER_FACTOR:g}x the "
        "element's conditioning (how far those ulp moves take the exact result: what fp32 "
        "arithmetic in any order may err)"
    )
    return (
        f"; {count} element(s) over {runs} run(s) were outside the tolerance of the fp32 "
        f"reference and accepted as no farther from an fp64 reference of the same inputs than "
        f"{own} (PyTorch's error against fp64 there up to {worst:.3g})"
    )


def _headline(err: SourceError) -> str:
    """The line of an error message that says what went wrong (not notes in parentheses)."""
    lines = [ln.strip() for ln in err.message.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if not ln.startswith("(") and not ln.startswith("^"):
            return ln[:300]
    return err.kind
