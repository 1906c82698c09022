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

import dataclasses
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tools.compare import Tolerance
from tools.errors import (
    BadInputError,
    ProblemError,
    ResourceError,
    TooLargeForCPUError,
    is_out_of_memory_text,
)
from tools.problem import Problem, check_candidate_source, read_kernel, read_problem
from tools.results import Audit, Evidence, KernelResources, MismatchReport, SourceError, Verdict
from tools.sandbox import JobEnded, JobOutcome, JobSession, Limits, Sandbox

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
    memory_mb: int | None = None
    """Host memory limit of each job in MB; None derives it from the problem's footprint."""
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
    """What checking a problem once found (cached per problem): its contract holds, its
    reference runs and is deterministic, and its footprint, which sets every verification's
    memory limits and GPU admission. No tensors: reference outputs live only in judge jobs."""

    estimate: dict[str, Any]
    footprint: dict[str, int]
    """Bytes of one trial's inputs, outputs and the model's parameters."""
    expected: list[dict[str, Any]]
    """Shape and dtype of each reference output."""
    memory: dict[str, float]
    """The check job's peaks (MiB): `host_peak_mb`, `gpu_peak_mb`."""
    timings: dict[str, float]

    @property
    def footprint_mb(self) -> float:
        f = self.footprint
        return (
            f.get("input_bytes", 0) + f.get("output_bytes", 0) + f.get("param_bytes", 0)
        ) / 2**20


HOST_FLOOR_MB = 8192
"""Host memory limit of a job for problems up to a few hundred MB: torch, Triton and a CUDA
context alone take 2-3 GB of address space."""


def host_memory_mb() -> int:
    """This machine's physical memory in MB (the problem check's limit before its footprint is
    known)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return 64 * 1024


class Verifier:
    """Verifies candidates; holds the sandbox and the per-problem checks. Thread-safe."""

    def __init__(self, options: VerifyOptions | None = None, sandbox: Sandbox | None = None):
        self.options = options or VerifyOptions()
        self.device = resolve_device(self.options.device)
        limits = Limits(timeout_s=self.options.timeout_s, memory_mb=self.options.memory_mb)
        self.sandbox = sandbox or Sandbox(
            device=self.device, limits=limits, slots_per_gpu=self.options.jobs_per_gpu
        )
        self._refs: dict[tuple, Reference] = {}
        self._lock = threading.Lock()

    # -- stage: check the problem (once) ----------------------------------------------------
    def reference(self, problem: Problem) -> Reference:
        """Check `problem` in a job of its own, once per problem, device and versions (kept in
        memory and on disk, `TRITON_AGENT_CACHE`): raises ProblemError (TooLargeForCPUError)
        for a problem that breaks the contract, ResourceError for one that does not fit."""
        key = (problem.digest, self.device, self.options.allow_large)
        with self._lock:
            if key in self._refs:
                return self._refs[key]
        disk_key = _problem_cache_key(problem, self.device, self.options.allow_large)
        cached = _read_problem_cache().get(disk_key)
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
        )
        with self._lock:
            self._refs[key] = ref
        _write_problem_cache(disk_key, dataclasses.asdict(ref))
        return ref

    def _check_problem(self, problem: Problem, *, exclusive: bool) -> dict[str, Any]:
        lim = self.sandbox.limits
        timeout = max(self.options.timeout_s, 60.0)
        out = self.sandbox.run(
            "tools.worker:problem_job",
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
            verdict = self._generalize(problem, kernel_source, kernel_path, verdict)
        verdict.duration_s = round(time.monotonic() - start, 3)
        verdict.device = "cpu" if self.device == "cpu" else "cuda"
        verdict.policy = self.options.policy
        return verdict

    def _generalize(self, problem: Problem, source: str, path: str, verdict: Verdict) -> Verdict:
        plan = generalization_plan(problem)
        if plan.kept:
            verdict.evidence.notes.append(f"generalisation check: not varied: {plan.kept}")
        if not plan.sizes:
            verdict.evidence.notes.append(
                "generalisation check: the problem has no size constants to vary"
            )
            return verdict
        sizes, other, shown = plan.sizes, None, ""
        for sizes in (plan.sizes, plan.input_sizes):
            if not sizes:
                continue
            shown = _shown(sizes)
            try:
                other = self._verify(problem.with_sizes(**sizes), source, path)
                break
            except ProblemError as exc:  # the reference itself does not accept those sizes
                verdict.evidence.notes.append(
                    f"generalisation check: at {shown} the problem itself fails: {exc}"
                )
                other = None
            if sizes == plan.input_sizes:
                break
        if other is None:
            verdict.evidence.notes.append(
                "generalisation check skipped: no sizes the problem accepts"
            )
            return verdict
        if other.correct:
            verdict.evidence.notes.append(f"generalisation check passed at {shown}")
            return verdict
        other.message = f"correct at the problem's sizes, but not at {shown}: {other.message}"
        other.evidence.notes.append(f"generalisation check failed at {shown}")
        other.evidence.notes.extend(self._size_dependence(problem, source, path, sizes))
        return other

    def _size_dependence(
        self, problem: Problem, source: str, path: str, sizes: dict[str, Any]
    ) -> list[str]:
        """Which sizes the candidate depends on: each varied alone (at most 4 verifications)."""
        if len(sizes) < 2 or len(sizes) > 4:
            return []
        failing, passing = [], []
        for name, value in sizes.items():
            try:
                alone = self._verify(problem.with_sizes(**{name: value}), source, path)
            except ProblemError:
                continue
            (passing if alone.correct else failing).append(f"{name}={value!r}")
        return [
            "the candidate depends on "
            + (", ".join(failing) or "no single size (only on a combination)")
            + " (each varied alone"
            + (f"; correct with {', '.join(passing)} alone)" if passing else ")")
        ]

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
        scales = [1.0] * self.options.trials + [float(x) for x in self.options.input_scales]
        trials = [(secrets.randbits(31), scale) for scale in scales]
        runs = None
        if ref.footprint_mb <= UNANNOUNCED_MAX_MB:  # (a large problem: seconds a trial)
            trials, runs = with_unannounced_trials(trials, self.options.trials)
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
        run = TrialRun(limits_mb=lim.memory_mb)
        run.runs = runs or [["first", "second"] for _ in trials]
        run.expected_trials = sum(len(r) > 1 for r in run.runs)  # the unannounced ones aside
        path = os.path.abspath(problem.path)
        tol = self.options.tolerance
        with self.sandbox.slot(exclusive=exclusive, gpu_mb=self.gpu_mb(ref)) as slot:
            judge_job = self.sandbox.start(
                slot,
                "tools.judge:judge_job",
                problem.source,
                path,
                seed=self.options.seed,
                atol=tol.atol,
                rtol=tol.rtol,
                preset=tol.preset,
                # The judge lives from before the candidate's job starts until after it ends:
                # its own limit must outlast the candidate's, or a slow (honest) candidate reads
                # as a judge that timed out, an error of the problem's.
                limits=dataclasses.replace(lim, timeout_s=2 * lim.timeout_s + 30),
            )
            cand = self.sandbox.start(
                slot,
                "tools.worker:candidate_job",
                source,
                os.path.basename(kernel_path) or "candidate.py",
                problem.source,
                path,
                seed=self.options.seed,
                poison=self.options.poison,
                aot_target=self.options.aot_target if self.device == "cpu" else None,
                limits=lim,
            )
            try:
                self._relay(judge_job, cand, trials, run)
            finally:
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
                if run.outcome is None:
                    if not run.candidate_stopped:
                        # Exactly one stop: a job that exits with a message unread in its
                        # socket resets the connection, and its result is lost with it.
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
        return run

    def _relay(self, judge_job: JobSession, cand: JobSession, trials, run: TrialRun) -> None:
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
        for t, (seed, scale) in enumerate(trials):
            msg = {"trial": t, "seed": seed, "scale": scale, "runs": run.runs[t]}
            try:
                judge_job.send(msg)
                exp = judge_job.recv()
            except JobEnded as exc:
                run.judge_failure = _judge_failure(exc.outcome, f"computing trial {t}'s reference")
                _note_memory_kill(run, exc.outcome, "the judge's job")
                return
            if not isinstance(exp, dict) or "error" in exp:
                err = exp.get("error") if isinstance(exp, dict) else "no reply"
                if isinstance(exp, dict) and exp.get("out_of_memory"):
                    run.out_of_memory = True
                    run.resource_failure = f"the reference ran out of memory on trial {t}: {err}"
                else:
                    run.judge_failure = f"the reference failed on trial {t}: {err}"
                return
            run.expected = exp.get("expected", [])
            try:
                cand.send(msg)
            except JobEnded as exc:
                run.outcome = exc.outcome
                return
            for expected_run in run.runs[t]:
                try:
                    got = cand.recv()
                except JobEnded as exc:
                    run.outcome = exc.outcome
                    return
                if (
                    not isinstance(got, dict)
                    or got.get("trial") != t
                    or got.get("run") != expected_run
                    or not isinstance(got.get("outputs"), list)
                ):
                    run.forged = "the candidate's job sent a message the harness does not send"
                    return
                try:
                    judge_job.send(
                        {
                            "compare": got["outputs"],
                            "run": expected_run,
                            "directory": cand.workdir,
                        }
                    )
                    reply = judge_job.recv()
                except JobEnded as exc:
                    run.judge_failure = _judge_failure(
                        exc.outcome, "reading the candidate's outputs"
                    )
                    _note_memory_kill(run, exc.outcome, "the judge's job")
                    run.judge_died_comparing = True
                    return
                diff = reply.get("diff") if isinstance(reply, dict) else None
                run.comparisons.append((t, expected_run, diff))
                if expected_run == "first":
                    run.got_shapes = [
                        d.get("shape")
                        for d in got["outputs"]
                        if isinstance(d, dict) and "shape" in d
                    ]
                bad = not isinstance(diff, dict) or diff.get("kind") != "ok"
                try:
                    cand.send({"release": True, "stop": bad})
                    run.candidate_stopped = bad
                except JobEnded as exc:
                    run.outcome = exc.outcome
                    return
                if bad:
                    return


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


PROBLEM_CACHE_VERSION = 1


def _problem_cache_key(problem: Problem, device: str, allow_large: bool) -> str:
    import torch
    import triton

    return "|".join(
        (problem.digest, device, torch.__version__, triton.__version__, str(allow_large))
    )


def _problem_cache_path():
    from tools.cache import cache_dir

    return cache_dir() / "problems.json"


def _read_problem_cache() -> dict[str, Any]:
    from tools.cache import read_json

    data = read_json(_problem_cache_path())
    if not isinstance(data, dict) or data.get("version") != PROBLEM_CACHE_VERSION:
        return {}
    return data.get("problems", {}) if isinstance(data.get("problems"), dict) else {}


def _write_problem_cache(key: str, entry: dict[str, Any]) -> None:
    """Merge one problem's check into the cache file."""
    from tools.cache import write_json

    problems = _read_problem_cache()
    problems[key] = entry
    write_json(_problem_cache_path(), {"version": PROBLEM_CACHE_VERSION, "problems": problems})


def _note_memory_kill(run: TrialRun, outcome: JobOutcome, who: str) -> None:
    if outcome.resource:
        run.out_of_memory = True
        run.resource_failure = f"{who} was killed at its host memory limit ({outcome.error})"


def _judge_failure(outcome: JobOutcome, doing: str) -> str:
    why = outcome.error.strip().splitlines()[-1] if outcome.error.strip() else outcome.kind
    return f"the judge's job ended while {doing} ({outcome.kind}: {why})"


def resource_verdict(message: str, memory: dict[str, float], footprint: dict[str, int]) -> Verdict:
    return Verdict(
        status="resource",
        compiled=False,
        correct=False,
        message=message,
        evidence=Evidence(memory=memory, footprint=footprint),
    )


@dataclass
class GeneralizationPlan:
    """The sizes a generalisation check tries, and what it leaves alone and why."""

    sizes: dict[str, Any]
    """Every constant varied: shapes of `get_inputs`, constructor sizes, float settings."""
    input_sizes: dict[str, Any]
    """Only the shapes of `get_inputs` (the fallback when the problem rejects `sizes`)."""
    kept: str
    """The constants not varied, with the reason (for the verdict's notes)."""


def generalization_plan(problem: Problem) -> GeneralizationPlan:
    """Other values for a problem's size constants (KernelBench's `batch_size = 16` included).

    Integers become about half plus one (so powers of two become odd and every size changes):
    those that shape `get_inputs`' tensors, UPPER_CASE ones, and constructor-only integers of 8
    or more (`out_features`); smaller constructor-only integers (`kernel_size`, `stride`, a
    reduction `dim`) are settings, not sizes, and stay. Constructor-only floats (`eps`, a slope,
    a scale) are halved: a candidate must read them from its constructor. Constants computed
    from others (`K = N * 2`) follow them. Constants of 1 stay (often a flag or a kernel size).
    """
    uses, derived = problem.size_uses, problem.derived_sizes
    sizes: dict[str, Any] = {}
    kept: list[str] = []
    for k, v in problem.size_constants.items():
        use = uses.get(k, "unused")
        if k in derived:
            continue
        if isinstance(v, int):
            if v < 2:
                kept.append(f"{k}={v} (under 2)")
            elif use == "init" and v < 8 and not k.isupper():
                kept.append(f"{k}={v} (a constructor setting under 8)")
            else:
                sizes[k] = v // 2 + 1
        elif (
            isinstance(v, float) and use == "init" and v != 0 and v == v and abs(v) != float("inf")
        ):
            sizes[k] = v / 2
        else:
            kept.append(f"{k}={v!r} ({'a float input setting' if use == 'input' else 'not used'})")
    input_sizes = {k: v for k, v in sizes.items() if uses.get(k) == "input" and isinstance(v, int)}
    return GeneralizationPlan(sizes=sizes, input_sizes=input_sizes, kept=", ".join(kept))


UNANNOUNCED_MAX_MB = 256.0
"""Problems whose tensors take more than this a trial get no unannounced trials."""


def with_unannounced_trials(
    trials: list[tuple[int, float]], plain: int
) -> tuple[list[tuple[int, float]], list[list[str]]]:
    """`trials` with one or two unannounced trials (fresh seed, one run), and the runs each
    trial gets: one right after the `plain` trials (so the calls past the documented number
    include fresh inputs: a second run of a trial repeats its inputs, where a stale output
    would still be right), and half the time one more at a random place among them. The
    candidate cannot know how many calls a verification makes nor which input set comes next,
    so a kernel correct for exactly the documented number of calls (and stale afterwards)
    fails; the verdict still counts the trials asked for."""
    out = list(trials)
    runs = [["first", "second"] for _ in trials]
    at = min(plain, len(out))
    out.insert(at, (secrets.randbits(31), 1.0))
    runs.insert(at, ["first"])
    if secrets.randbelow(2):
        at = secrets.randbelow(min(plain, len(out) - 1) + 1)
        out.insert(at, (secrets.randbits(31), 1.0))
        runs.insert(at, ["first"])
    return out, runs


def generalization_sizes(problem: Problem) -> dict[str, Any]:
    """The sizes the generalisation check tries first (`generalization_plan(problem).sizes`)."""
    return generalization_plan(problem).sizes


def _shown(sizes: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sizes.items())


def judge(run: TrialRun, ref: Reference, options: VerifyOptions) -> Verdict:
    """Turn what a verification's two jobs produced into the verdict. Pure: no I/O."""
    verdict = _judge(run, ref, options)
    verdict.evidence.memory = {**run.peaks(), **verdict.evidence.memory}
    verdict.evidence.footprint = dict(ref.footprint)
    verdict.evidence.notes.extend(run.notes)
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
    tol = options.tolerance
    violations = data.get("violations") or []
    audit = Audit(**data["audit"]) if data.get("audit") else Audit()
    audit.sandbox_violations = list(violations)
    evidence = Evidence(
        audit=audit, notes=list(data.get("notes", [])), timings=dict(data.get("timings", {}))
    )
    evidence.resources = [KernelResources(**r) for r in data.get("resources", [])]
    evidence.aot_errors = [SourceError(**e) for e in data.get("aot_errors", [])]
    evidence.expected_shapes = [list(e["shape"]) for e in ref.expected if "shape" in e]
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
            status="policy",
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
    n_plain = run.expected_trials - len(options.input_scales)
    if options.input_scales:
        evidence.notes.append(
            f"trials {n_plain}..{run.expected_trials - 1} are the generalisation check (inputs "
            "scaled by " + ", ".join(f"{x:g}" for x in options.input_scales) + ")"
        )
    evidence.got_shapes = [list(s) for s in run.got_shapes if isinstance(s, list)]
    for trial, which, diff in run.comparisons:
        kind = diff.get("kind") if isinstance(diff, dict) else None
        message = str(diff.get("message", "")) if isinstance(diff, dict) else ""
        if kind == "ok":
            continue
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
    done = {(t, w) for t, w, d in run.comparisons if isinstance(d, dict) and d.get("kind") == "ok"}
    expected_runs = sum(map(len, run.runs)) or 2 * run.expected_trials
    if len(done) != expected_runs:
        # Every trial's two runs must have been compared; fewer means the job stopped early
        # without an error the harness reported (a forged end, a swallowed exit).
        return Verdict(
            status="cheat",
            compiled=True,
            correct=False,
            message=f"only {len(done)} of {expected_runs} runs reached the comparison, "
            "with no error reported: the job's protocol was cut short",
            evidence=evidence,
        )
    import torch

    dt_name = ref.expected[0].get("dtype") if ref.expected else None
    dt = getattr(torch, str(dt_name).replace("torch.", ""), None) if dt_name else None
    atol, rtol = tol.for_dtype(dt) if dt is not None else (None, None)
    note = " (mixed: " + ", ".join(audit.library_ops) + " ran as library calls)" if mixed else ""
    return Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message=f"correct on {run.expected_trials} trials ({audit.triton_launches} Triton launches, "
        f"kernels: {', '.join(audit.kernels)}){note}",
        evidence=evidence,
        trials=run.expected_trials,
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
