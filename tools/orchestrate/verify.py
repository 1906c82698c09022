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

This module runs the protocol (`Verifier`): the two jobs of a verification, trial by trial.
What it is asked to do is `tools.orchestrate.verify_options`, the problem's check `tools.orchestrate.reference`, the
rules that turn the jobs' findings into a verdict `tools.orchestrate.verdict_rules`, and the check at other
sizes `tools.orchestrate.generalize`.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from tools.checks.arithmetic import arithmetic_of
from tools.checks.stochastic import STOCHASTIC_RUNS
from tools.core.errors import (
    ProblemError,
    ResourceError,
    TooLargeForCPUError,
    is_out_of_memory_text,
)
from tools.core.problem import Problem, check_candidate_source, read_kernel, read_problem
from tools.core.problem_dtype import PRECISION_ENV, cache_suffix, precision_env, precision_words
from tools.core.results import Evidence, SourceError, Verdict
from tools.job.judge import judge_job as outputs_judge_job
from tools.job.problem_job import problem_job
from tools.job.size_guard import ALLOW_LARGE_ENV
from tools.job.stochastic_judge import judge_job as stochastic_judge_job
from tools.job.stochastic_judge import run_names as stochastic_run_names
from tools.job.worker import candidate_job
from tools.orchestrate.generalize import generalize
from tools.orchestrate.reference import (
    Reference,
    problem_cache_key,
    read_problem_cache,
    write_problem_cache,
)
from tools.orchestrate.verdict_rules import TrialRun, judge, resource_verdict, scaled_words
from tools.orchestrate.verify_options import (
    SCALE_TRIALS_MAX_OUTPUT_BYTES,
    UNANNOUNCED_MAX_MB,
    VerifyOptions,
    host_memory_mb,
    resolve_device,
    unchecked_calls,
    with_unannounced_trials,
)
from tools.sandboxing.limits import HOST_FLOOR_MB, Limits
from tools.sandboxing.sandbox import JobEnded, JobOutcome, JobSession, Sandbox


class Verifier:
    """Verifies candidates; holds the sandbox and the per-problem checks. Thread-safe."""

    sandbox_factory: ClassVar[Callable[..., Sandbox]] = Sandbox
    """Builds the sandbox of a Verifier given none, as `sandbox_factory(device=, limits=,
    jobs_per_gpu=)`: the seam for running jobs elsewhere (a test runs a "cuda" verifier's jobs
    on the CPU with a Sandbox subclass)."""

    def __init__(self, options: VerifyOptions | None = None, sandbox: Sandbox | None = None):
        self.options = options or VerifyOptions()
        self.device = resolve_device(self.options.device)
        limits = Limits(timeout_s=self.options.timeout_s, memory_mb=self.options.memory_mb)
        self.sandbox = sandbox or self.sandbox_factory(
            device=self.device, limits=limits, jobs_per_gpu=self.options.jobs_per_gpu
        )
        # every job of this sandbox runs the problem at the options' precision (the dtype the
        # problem check, the judge, the candidate and the timing job cast it to); a sandbox
        # shared by verifiers (a profile's re-verification) runs at the last one's
        kept = {k: v for k, v in getattr(self.sandbox, "job_env", {}).items() if k != PRECISION_ENV}
        self.sandbox.job_env = {**kept, **precision_env(self.options.precision)}
        self._refs: dict[tuple, Reference] = {}
        self._lock = threading.Lock()

    # -- stage: check the problem (once) ----------------------------------------------------
    def reference(self, problem: Problem) -> Reference:
        """Check `problem` in a job of its own, once per problem, device and versions (kept in
        memory and on disk, `TRITON_AGENT_CACHE`): raises ProblemError (TooLargeForCPUError)
        for a problem that breaks the contract, ResourceError for one that does not fit."""
        at = cache_suffix(self.options.precision)
        key = (problem.digest + at, self.device, self.options.allow_large)
        with self._lock:
            if key in self._refs:
                return self._refs[key]
        disk_key = problem_cache_key(problem, self.device, self.options.allow_large) + at
        cached = read_problem_cache().get(disk_key)
        if isinstance(cached, dict):
            try:
                ref = Reference(**cached)
            except TypeError:
                ref = None
            if ref is not None:
                with self._lock:
                    self._refs[key] = ref
                return ref
        data = self._check_problem(problem, exclusive=False)
        if (
            "error" in data
            and is_out_of_memory_text(data["error"])
            and self.device == "cuda"
            and self.sandbox.slots > 1
        ):
            # Out of GPU memory beside other jobs: once more, alone on the GPU.
            data = self._check_problem(problem, exclusive=True)
        if "error" in data:
            cls = TooLargeForCPUError if data.get("too_large") else ProblemError
            if is_out_of_memory_text(data["error"]):
                raise ResourceError(
                    f"{problem.path}: the problem does not fit in a job's memory "
                    f"(host limit {self.options.memory_mb or 'derived'} MB): {data['error']}. "
                    "Raise --memory-mb, or shrink the problem's sizes"
                )
            raise cls(f"{problem.path}: {data['error']}")
        ref = Reference(
            estimate=data.get("estimate", {}),
            footprint=data.get("footprint", {}),
            expected=data.get("expected", []),
            memory=data.get("memory", {}),
            timings=data.get("timings", {}),
            stochastic=bool(data.get("stochastic")),
        )
        with self._lock:
            self._refs[key] = ref
        write_problem_cache(disk_key, dataclasses.asdict(ref))
        return ref

    def _check_problem(self, problem: Problem, *, exclusive: bool) -> dict[str, Any]:
        lim = self.sandbox.limits
        timeout = max(self.options.timeout_s, 60.0)
        out = self.sandbox.run(
            problem_job,
            problem.source,
            os.path.abspath(problem.path),
            seed=self.options.seed,
            trial_seed=secrets.randbits(31),
            check_size=not self.options.allow_large,
            timeout=timeout,
            limits=Limits(
                timeout_s=timeout,
                memory_mb=self.options.memory_mb or host_memory_mb() * 8 // 10,
                file_size_mb=lim.file_size_mb,
            ),
            exclusive=exclusive,
        )
        if out.kind == "timeout":
            raise ProblemError(
                f"{problem.path}: the reference Model did not finish in {out.error}; "
                "reduce the sizes or raise --timeout"
            )
        if out.kind == "crash":
            if out.resource:
                raise ResourceError(
                    f"{problem.path}: checking the problem needs more host memory than its job "
                    f"may use ({out.error}); raise --memory-mb"
                )
            raise ProblemError(
                f"{problem.path}: the reference crashed: {out.error}\n{out.stderr_tail}"
            )
        if out.kind == "error" or not isinstance(out.value, dict):
            raise ProblemError(
                f"{problem.path}: the problem could not be checked: "
                + ((out.error or "no result").strip().splitlines() or ["unknown error"])[-1]
            )
        return out.value

    def job_limits(self, ref: Reference) -> Limits:
        """Limits of one verification job, derived from the problem's footprint unless
        `--memory-mb` fixed them: host memory for a few copies of the problem's tensors over a
        floor, and files large enough for the CPU's output handover."""
        lim = self.sandbox.limits
        mb = self.options.memory_mb
        if mb is None:
            copies = 6 if self.device == "cpu" else 2  # CPU: tensors live in host memory
            mb = int(max(HOST_FLOOR_MB, 4096 + copies * ref.footprint_mb))
        out_mb = ref.footprint.get("output_bytes", 0) / 2**20
        return Limits(
            timeout_s=self.options.timeout_s,
            memory_mb=mb,
            file_size_mb=int(max(lim.file_size_mb, out_mb + 64)),
            network=lim.network,
            guard=lim.guard,
        )

    def gpu_mb(self, ref: Reference) -> float:
        """Device memory a verification (judge and candidate jobs) is expected to take: the
        judge holds one trial's reference outputs (and its inputs while computing them), the
        candidate pristine inputs, its arguments and outputs, each with its parameters; plus
        two CUDA contexts. The largest peak measured for this problem, when larger."""
        f = ref.footprint
        tensors = (
            3 * f.get("input_bytes", 0) + 2 * f.get("output_bytes", 0) + 2 * f.get("param_bytes", 0)
        ) / 2**20
        return max(tensors * 1.25 + 2048, 2 * ref.memory.get("gpu_peak_mb", 0))

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
            verdict = generalize(
                problem, verdict, lambda other: self._verify(other, kernel_source, kernel_path)
            )
        # what the launched kernels compute in, read here, not in the candidate's process
        verdict.arithmetic = arithmetic_of(kernel_source, verdict, triton_cache_out)
        verdict.duration_s = round(time.monotonic() - start, 3)
        verdict.device = "cpu" if self.device == "cpu" else "cuda"
        verdict.policy = self.options.policy
        verdict.precision = self.options.precision
        if verdict.precision != "fp32":  # the verdict names the precision it holds at
            verdict.message += f" [at {precision_words(verdict.precision)}]"
        verdict.reference_numerics = self.options.reference_numerics
        if verdict.reference_numerics != "exact":  # a weaker ok: every report says so
            verdict.message += " [reference: PyTorch's defaults, TF32 convolutions]"
        return verdict

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
        try:
            ref = self.reference(problem)
        except ResourceError as exc:
            return resource_verdict(str(exc), {}, {})
        # Fresh seeds for every verification, drawn here: nothing the candidate can read before
        # a trial (the problem, a fixed seed, torch.initial_seed()) gives that trial's inputs.
        # The scale trials (issue 35) come after the trials at the problem's own scale, so a
        # failure there says the kernel is right at one scale and wrong at another.
        scaled = list(self.options.scale_trials())
        unscaled = ""
        if scaled and ref.footprint.get("output_bytes", 0) > SCALE_TRIALS_MAX_OUTPUT_BYTES:
            unscaled = (
                f"no scale trial (inputs {', '.join(f'x{s:g}' for s in scaled)}): the outputs "
                f"take {ref.footprint['output_bytes'] / 2**20:.0f} MiB, over the "
                f"{SCALE_TRIALS_MAX_OUTPUT_BYTES >> 20} MiB up to which the fp64 rule judges "
                "the elements that cancel (without it an honest kernel fails there)"
            )
            scaled = []
        scales = [1.0] * self.options.trials + scaled
        trials = [(secrets.randbits(31), scale) for scale in scales]
        runs = None
        if ref.footprint_mb <= UNANNOUNCED_MAX_MB:  # (a large problem: seconds a trial)
            trials, runs = with_unannounced_trials(trials, self.options.trials)
        if ref.stochastic:
            # Judged statistically (tools.checks.stochastic): a documented trial is STOCHASTIC_RUNS
            # runs of each side on its inputs; an unannounced one keeps its single run.
            runs = [
                stochastic_run_names() if len(r) > 1 else list(r)
                for r in (runs or [["first", "second"] for _ in trials])
            ]
        run = self._run_trials(
            problem, kernel_source, kernel_path, ref, trials, False, triton_cache_out, runs
        )
        if run.out_of_memory and self.device == "cuda" and self.sandbox.slots > 1:
            # Out of GPU memory beside other jobs: once more, alone on the GPU.
            run = self._run_trials(
                problem, kernel_source, kernel_path, ref, trials, True, triton_cache_out, runs
            )
            run.notes.append(
                "retried alone on its GPU after running out of memory beside other jobs"
            )
        verdict = judge(run, ref, self.options)
        if ref.stochastic:
            _mark_statistical(verdict, run)
        if unscaled:
            verdict.evidence.notes.append(unscaled)
        return verdict

    def _run_trials(
        self,
        problem: Problem,
        source: str,
        kernel_path: str,
        ref: Reference,
        trials: list[tuple[int, float]],
        exclusive: bool,
        triton_cache_out: str | None,
        runs: list[list[str]] | None = None,
    ) -> TrialRun:
        """Run the judge's job and the candidate's job side by side on one device, trial by
        trial, relaying seeds, output descriptors and the judge's findings."""
        lim = self.job_limits(ref)
        if ref.stochastic:
            # 16 times the runs of a deterministic trial: the jobs' time limit follows
            lim = dataclasses.replace(lim, timeout_s=lim.timeout_s * STOCHASTIC_RUNS / 2)
        run = TrialRun(limits_mb=lim.memory_mb)
        run.runs = runs or [["first", "second"] for _ in trials]
        run.expected_trials = sum(len(r) > 1 for r in run.runs)  # the unannounced ones aside
        run.scales = [float(scale) for _, scale in trials]
        with self.sandbox.slot(exclusive=exclusive, gpu_mb=self.gpu_mb(ref)) as slot:
            judge_job, cand = self._start_jobs(slot, problem, source, kernel_path, ref, lim)
            try:
                _relay(judge_job, cand, trials, run)
            finally:
                _end_judge(judge_job, run)
                _end_candidate(cand, run, triton_cache_out)
        return run

    def _start_jobs(
        self,
        slot: Any,
        problem: Problem,
        source: str,
        kernel_path: str,
        ref: Reference,
        lim: Limits,
    ) -> tuple[JobSession, JobSession]:
        """Start the judge's job (first: it outlives the candidate's), then the candidate's, in
        `slot` under the limits `lim`."""
        path = os.path.abspath(problem.path)
        judge_job = self.sandbox.start(
            slot,
            stochastic_judge_job if ref.stochastic else outputs_judge_job,
            problem.source,
            path,
            seed=self.options.seed,
            **judge_settings(self.options),
            # The judge lives from before the candidate's job starts until after it ends:
            # its own limit must outlast the candidate's, or a slow (honest) candidate reads
            # as a judge that timed out, an error of the problem's.
            limits=dataclasses.replace(lim, timeout_s=2 * lim.timeout_s + 30),
        )
        cand = self.sandbox.start(
            slot,
            candidate_job,
            source,
            os.path.basename(kernel_path) or "candidate.py",
            problem.source,
            path,
            seed=self.options.seed,
            poison=self.options.poison,
            aot_target=self.options.aot_target if self.device == "cpu" else None,
            limits=lim,
            # the interpreter's per-launch time limit is lifted in the job, where it applies
            env={ALLOW_LARGE_ENV: "1"} if self.options.allow_large else None,
        )
        return judge_job, cand


def _relay(judge_job: JobSession, cand: JobSession, trials, run: TrialRun) -> None:
    """Between the two jobs, once both are ready: trial by trial, the trial's message to the
    judge (which computes the reference) and then to the candidate; each of its runs to the
    judge to compare (`_relay_runs`). Stops at the first failure, which `run` records."""
    try:
        judge_job.recv()  # loaded
    except JobEnded as exc:
        run.judge_failure = _judge_failure(exc.outcome, "loading the problem")
        _note_memory_kill(run, exc.outcome, "the judge's job")
        return
    try:
        cand.recv()  # built; a candidate that fails to import or build returns instead
    except JobEnded as exc:
        run.outcome = exc.outcome
        return
    unchecked_due = True
    for t, (seed, scale) in enumerate(trials):
        msg = {"trial": t, "seed": seed, "scale": scale, "runs": run.runs[t]}
        if unchecked_due and len(run.runs[t]) == 1:
            # how many unchecked calls come before the first unannounced trial's run: drawn
            # here, out of the candidate's process (its job draws only if this is missing)
            msg["unchecked"] = unchecked_calls()
            unchecked_due = False
        if not _relay_reference(judge_job, t, msg, run):
            return
        try:
            cand.send(msg)
        except JobEnded as exc:
            run.outcome = exc.outcome
            return
        if not _relay_runs(judge_job, cand, t, run):
            return


def _relay_reference(judge_job: JobSession, t: int, msg: dict[str, Any], run: TrialRun) -> bool:
    """Trial `t`'s message to the judge, which computes its reference outputs: whether it did
    (`run.expected`, their shapes and dtypes); else `run` records why not."""
    try:
        judge_job.send(msg)
        exp = judge_job.recv()
    except JobEnded as exc:
        run.judge_failure = _judge_failure(exc.outcome, f"computing trial {t}'s reference")
        _note_memory_kill(run, exc.outcome, "the judge's job")
        return False
    if not isinstance(exp, dict) or "error" in exp:
        err = exp.get("error") if isinstance(exp, dict) else "no reply"
        if isinstance(exp, dict) and exp.get("out_of_memory"):
            run.out_of_memory = True
            run.resource_failure = f"the reference ran out of memory on trial {t}: {err}"
        else:
            run.judge_failure = f"the reference failed on trial {t}: {err}"
        return False
    run.expected = exp.get("expected", [])
    return True


def _relay_runs(judge_job: JobSession, cand: JobSession, t: int, run: TrialRun) -> bool:
    """Trial `t`'s runs, each as the candidate's job exports it: its outputs to the judge to
    compare, the finding into `run`, then the candidate told to release them (and to stop where
    the run was not ok). Whether the trial's runs all compared ok; else `run` records why not."""
    for expected_run in run.runs[t]:
        try:
            got = cand.recv()
        except JobEnded as exc:
            run.outcome = exc.outcome
            return False
        if (
            not isinstance(got, dict)
            or got.get("trial") != t
            or got.get("run") != expected_run
            or not isinstance(got.get("outputs"), list)
        ):
            run.forged = "the candidate's job sent a message the harness does not send"
            return False
        try:
            judge_job.send(
                {"compare": got["outputs"], "run": expected_run, "directory": cand.workdir}
            )
            reply = judge_job.recv()
        except JobEnded as exc:
            run.judge_failure = _judge_failure(exc.outcome, "reading the candidate's outputs")
            _note_memory_kill(run, exc.outcome, "the judge's job")
            run.judge_died_comparing = True
            return False
        diff = reply.get("diff") if isinstance(reply, dict) else None
        run.comparisons.append((t, expected_run, diff))
        if expected_run == "first":
            run.got_shapes = [
                d.get("shape") for d in got["outputs"] if isinstance(d, dict) and "shape" in d
            ]
        bad = not isinstance(diff, dict) or diff.get("kind") != "ok"
        try:
            cand.send({"release": True, "stop": bad})
            run.candidate_stopped = bad
        except JobEnded as exc:
            run.outcome = exc.outcome
            return False
        if bad:
            return False
    return True


def _end_judge(judge_job: JobSession, run: TrialRun) -> None:
    """Stop the judge's job and wait for it; its memory peaks into `run`."""
    try:
        judge_job.send({"stop": True})
        judged = judge_job.wait_result()
    except JobEnded as exc:
        judged = exc.outcome
    judged = judge_job.end(judged)
    if judged.kind == "ok" and isinstance(judged.value, dict):
        run.memory.append(dict(judged.value.get("memory") or {}))
    if judged.peak_rss_mb:
        run.memory.append({"host_peak_mb": judged.peak_rss_mb})


def _end_candidate(cand: JobSession, run: TrialRun, triton_cache_out: str | None) -> None:
    """Stop the candidate's job (unless told already) and take its outcome into `run`: its
    evidence, memory peaks, and whether it ran out of memory. `triton_cache_out`: where its
    compiled kernels are kept."""
    if run.outcome is None:
        if not run.candidate_stopped:
            # Exactly one stop: a job that exits with a message unread in its socket resets
            # the connection, and its result is lost with it.
            try:
                cand.send({"stop": True})
            except JobEnded:
                pass
        run.outcome = cand.wait_result()
    run.outcome = cand.end(run.outcome, triton_cache_out=triton_cache_out)
    if run.outcome.peak_rss_mb:
        run.memory.append({"host_peak_mb": run.outcome.peak_rss_mb})
    value = run.outcome.value
    if isinstance(value, dict) and isinstance(value.get("memory"), dict):
        run.memory.append(dict(value["memory"]))
    if isinstance(value, dict) and value.get("out_of_memory"):
        run.out_of_memory = True
        run.resource_failure = (
            f"the candidate ran out of memory: {str(value['out_of_memory'])[:300]}"
        )


def judge_settings(options: VerifyOptions) -> dict[str, Any]:
    """The judge job's keywords from the options: the tolerance, and the numerics its reference
    computes in (`tools.orchestrate.reference.reference_numerics`)."""
    tol = options.tolerance
    return {
        "atol": tol.atol,
        "rtol": tol.rtol,
        "preset": tol.preset,
        "numerics": options.reference_numerics,
    }


def _mark_statistical(verdict: Verdict, run: TrialRun) -> None:
    """A stochastic problem's verdict says it was judged statistically (`Verdict.statistical`,
    `evidence.statistics`: each judged trial's tests), and an `ok` message says how."""
    verdict.statistical = True
    verdict.evidence.statistics = [
        {"trial": trial, **diff["statistics"]}
        for trial, _, diff in run.comparisons
        if isinstance(diff, dict) and isinstance(diff.get("statistics"), dict)
    ]
    if verdict.status != "ok":
        return
    runs = max((len(r) for r in run.runs), default=0)
    single = sum(len(r) == 1 for r in run.runs)
    extra = f" (and {single} single-run trial(s) against the reference's spread)" if single else ""
    scaled = scaled_words(run)
    verdict.message = verdict.message.replace(
        f"correct on {run.expected_trials} trials{scaled}",
        f"correct in distribution on {run.expected_trials} trials{scaled}{extra}: the reference is "
        f"stochastic (it draws from torch's RNG), so it was judged statistically, {runs} runs "
        "of each side a trial on the same inputs, per-element means and variances and random "
        "projections tested against the reference's (no test rejected)",
        1,
    )


def _note_memory_kill(run: TrialRun, outcome: JobOutcome, who: str) -> None:
    if outcome.resource:
        run.out_of_memory = True
        run.resource_failure = f"{who} was killed at its host memory limit ({outcome.error})"


def _judge_failure(outcome: JobOutcome, doing: str) -> str:
    why = outcome.error.strip().splitlines()[-1] if outcome.error.strip() else outcome.kind
    return f"the judge's job ended while {doing} ({outcome.kind}: {why})"


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
