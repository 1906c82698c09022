"""Benchmark runner: pass@k, fast_p and reports over a directory of problems.

Two modes (docs/bench.md):
- `sample`: N independent candidates per problem, all drawn from the first-round prompt (the
  published KernelLLM protocol: temperature 1.0, top_p 0.97). pass@k is Chen et al.'s unbiased
  estimator over the N samples. With the compiler "backend", one compiler candidate per problem.
- `loop`: the agent (`agent.runner.run`) with a budget of N candidates per problem;
  success@k = a correct kernel among the first k candidates the loop drafted.

Every candidate and its verdict is kept under `OUT/<problem>/<NN>/` (`response.txt`,
`kernel.py`, `verdict.json`, `sample.json`, written last as the "done" mark), so a rerun skips
what is done and `rebuild_report(OUT)` makes the report from the files alone.

Verification runs through one `Verifier` (`--jobs-per-gpu` sandbox slots per GPU, or one per CPU
core) fed from a thread pool; `executor="ray"` sends one task per problem to a Ray cluster
instead, each task evaluating through the same `evaluate_sample`.

This module imports only `tools/` and the light `agent` modules (no langgraph, rich or openai):
the loop mode and the LLM backends are imported when used, so the compiler mode and the
throughput benchmark run on a machine without them.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import logging
import math
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import AgentConfig
from agent.rundir import write_atomic
from tools.errors import BackendError, BadInputError, TritonAgentError
from tools.evaluate import DEFAULT_BASELINE, evaluate
from tools.problem import Problem, read_problem
from tools.results import strict_json
from tools.verify import Verifier, VerifyOptions

log = logging.getLogger(__name__)

BENCH_SCHEMA_VERSION = 1
MODES = ("sample", "loop")
PROTOCOLS = ("ours", "kernelbench")
EXECUTORS = ("thread", "ray")
FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
SPEEDUP_BASES = ("eager", "compile", "best")
"""Every report gives the speedup over each baseline and over the better (faster) of the two."""
BASE_NAMES = {"eager": "eager", "compile": "torch.compile", "best": "the better of the two"}
KERNELBENCH_TRIALS = 5
KERNELBENCH_TIMING_TRIALS = 100

Event = Callable[[dict[str, Any]], None]


# ---------------------------------------------------------------------------------------------
# Metrics (pure)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k), in the stable product form
    1 - prod_{i=n-c+1}^{n} (1 - k/i)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n (n={n}, c={c})")
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n (n={n}, k={k})")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def solved_within(order_correct: Sequence[bool], k: int, free: bool = False) -> bool:
    """Loop mode: a correct kernel among the first k drafted candidates (or a free one: the
    compiler seed)."""
    return free or any(order_correct[:k])


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def fast_p(best_speedups: Sequence[float | None], solved: Sequence[bool], p: float) -> float:
    """Fraction of problems with a correct candidate whose speedup is > p.

    `best_speedups[i]` is problem i's best speedup among its correct candidates (None: not
    timed); `solved[i]` whether it has a correct candidate at all. fast_0 is the correctness rate.
    """
    if not solved:
        return 0.0
    hits = 0
    for sp, ok in zip(best_speedups, solved, strict=True):
        if not ok:
            continue
        if p <= 0.0 or (sp is not None and sp > p):
            hits += 1
    return hits / len(solved)


# ---------------------------------------------------------------------------------------------
# Configuration and records


@dataclass(kw_only=True)
class BenchConfig:
    """What a benchmark run was asked to do (written to OUT/bench.json)."""

    mode: str = "sample"
    samples: int = 20
    """Candidates per problem (sample mode) or the loop's budget (loop mode)."""
    ks: tuple[int, ...] | None = None
    """pass@k values; default 1, 10, 20 (those not above the candidates per problem)."""
    protocol: str = "ours"
    """`ours` (tools.verify defaults) or `kernelbench` (5 trials, atol=rtol=1e-2, 100 timing
    trials against eager)."""
    executor: str = "thread"
    ray_address: str | None = None
    out: str
    only: tuple[str, ...] = ()
    """Problem names (file stems) to run; empty for all."""
    compiler_seed: bool = False
    """Loop mode: also evaluate torch.compile's Triton as a free attempt 0."""
    stop_grace_s: float = 20.0
    """On SIGINT: seconds the candidates being evaluated may take to finish (and be recorded)
    before their jobs are killed and the run reports what is done."""
    agent: AgentConfig = field(default_factory=AgentConfig)
    """Backend, sampling and verification settings, as for `optimize`."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BadInputError(f"--mode must be one of {', '.join(MODES)}")
        if self.protocol not in PROTOCOLS:
            raise BadInputError(f"--protocol must be one of {', '.join(PROTOCOLS)}")
        if self.executor not in EXECUTORS:
            raise BadInputError(f"--executor must be one of {', '.join(EXECUTORS)}")
        if self.samples < 1:
            raise BadInputError("--samples must be at least 1")
        if not self.stop_grace_s >= 0:
            raise BadInputError("--stop-grace must be a number of seconds >= 0")
        if self.ks is None:
            self.ks = tuple(k for k in (1, 10, 20) if k <= self.per_problem) or (1,)
        if not self.ks or any(k < 1 for k in self.ks):
            raise BadInputError("--k takes positive integers, e.g. 1,10,20")
        self.ks = tuple(sorted(set(self.ks)))
        if self.protocol == "kernelbench":
            self.agent = dataclasses.replace(
                self.agent,
                trials=KERNELBENCH_TRIALS,
                tolerance_preset="kernelbench-v0",
                baseline="eager",
                atol=None,
                rtol=None,
            )

    @property
    def compiler_only(self) -> bool:
        from agent.llm import resolve_kind

        a = self.agent
        kind = resolve_kind(
            a.backend, model=a.model, base_url=a.base_url, replies=a.replies, compiler=True
        )
        return kind == "compiler"

    @property
    def per_problem(self) -> int:
        """Candidates per problem in sample mode (the compiler drafts one)."""
        return 1 if self.compiler_only and self.mode == "sample" else self.samples

    def verify_options(self) -> VerifyOptions:
        return self.agent.verify_options()

    def settings(self) -> dict[str, Any]:
        a = self.agent
        return {
            "mode": self.mode,
            "samples": self.samples,
            "per_problem": self.per_problem,
            "ks": list(self.ks),
            "protocol": self.protocol,
            "executor": self.executor,
            "backend": "compiler" if self.compiler_only else a.backend,
            "model": None if self.compiler_only else a.model,
            "base_url": None if self.compiler_only else a.base_url,
            "replies": a.replies,
            "prompt_format": a.prompt_format,
            "temperature": a.temperature,
            "top_p": a.top_p,
            "max_tokens": a.max_tokens,
            "compiler_seed": self.compiler_seed,
            "trials": a.trials,
            "tolerance_preset": a.tolerance_preset,
            "atol": a.atol,
            "rtol": a.rtol,
            "policy": a.policy,
            "seed": a.seed,
            "timeout_s": a.timeout_s,
            "aot_target": a.aot_target,
        }


# Settings that must match when a run is resumed into the same --out (others may change).
_RESUME_KEYS = (
    "mode",
    "protocol",
    "backend",
    "model",
    "trials",
    "tolerance_preset",
    "atol",
    "rtol",
    "policy",
    "seed",
    "temperature",
    "top_p",
    "prompt_format",
)


def profile_options(protocol: str, baseline: str = DEFAULT_BASELINE) -> Any:
    """ProfileOptions for the protocol (KernelBench's bar is eager) and bar; None when
    tools.profile is not available."""
    try:
        from tools.profile import ProfileOptions
    except ImportError:
        return None
    if protocol == "kernelbench":
        # ours as always, and beside it KernelBench's own method (100 event-timed trials after
        # warm-up, mean and std) against eager: `profile.kernelbench`, `eager_kernelbench`
        return ProfileOptions(baseline="eager", kernelbench=True)
    return ProfileOptions(baseline=baseline)


@dataclass(kw_only=True)
class Draft:
    """A candidate waiting for evaluation."""

    problem: str
    sample: int
    source: str
    """`llm:<name>`, `compiler`, or `compiler:pending` (drafted inside the evaluation task)."""
    response: str = ""
    code: str | None = None
    drafted_at: float | None = None
    """Epoch seconds when the LLM call that drew it began (None: drafted in its evaluation)."""
    draft_s: float = 0.0
    """Its share of that LLM call (the call's time over the candidates it returned)."""


@dataclass(kw_only=True)
class SampleRecord:
    """One evaluated candidate (OUT/<problem>/<NN>/sample.json)."""

    problem: str
    sample: int
    source: str
    status: str
    correct: bool
    compiled: bool
    speedups: dict[str, float] = field(default_factory=dict)
    """Over `eager` and `compile`, where timed (GPU, correct kernels)."""
    profile_status: str | None = None
    summary: str = ""
    duration_s: float = 0.0
    """The evaluation: a compiler draft made there, verification and timing."""
    device: str = "cpu"
    draft_s: float = 0.0
    """Drafting: the candidate's share of its LLM call, or the compiler's drafting job."""
    wall_s: float = 0.0
    """Draft + verify + time for this candidate (the LLM share plus `duration_s`)."""
    started_at: float | None = None
    """Epoch seconds when work on it began (its LLM call, else its evaluation)."""
    ended_at: float | None = None
    """Epoch seconds when its evaluation ended."""
    memory: dict[str, float] = field(default_factory=dict)
    """Peak memory seen (`host_peak_mb`, `gpu_peak_mb`, ...): the largest value of each key in
    the verdict's `evidence.memory` and the profile's `memory` (`peak_memory`)."""

    def __post_init__(self) -> None:
        timed = [self.speedups[k] for k in ("eager", "compile") if self.speedups.get(k)]
        if timed and "best" not in self.speedups:  # records written before the `best` bar
            self.speedups["best"] = min(timed)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(kw_only=True)
class Evaluated:
    """What an evaluation task hands back: the record, its evidence and the (maybe just
    drafted) candidate."""

    record: SampleRecord
    verdict: dict[str, Any]
    profile: dict[str, Any] | None
    draft: Draft


# ---------------------------------------------------------------------------------------------
# Evaluating one candidate: the one code path for every executor


def evaluate_sample(
    verifier: Verifier,
    problem: Problem,
    draft: Draft,
    *,
    protocol: str = "ours",
    baseline: str = DEFAULT_BASELINE,
    profile_opts: Any = None,
) -> Evaluated:
    """Evaluate a candidate (`tools.evaluate`, the one evaluation path). A compiler draft still
    pending is drafted first, here, in the same sandbox. Never raises for a bad candidate;
    raises TritonAgentError when the problem itself cannot run. `profile_opts` (ProfileOptions)
    replaces the protocol's timing options; `baseline` is the bar for `slower`."""
    start = time.monotonic()
    started_at = time.time()
    draft_s = draft.draft_s
    if draft.source == "compiler:pending":
        draft = _draft_compiler(verifier, problem, draft)
        draft_s = time.monotonic() - start
    opts = profile_opts if profile_opts is not None else profile_options(protocol, baseline)
    ev = evaluate(
        problem,
        draft.code,
        verifier=verifier,
        kernel_path=f"{problem.name}_{draft.sample:02d}.py",
        baseline=opts.baseline if opts is not None else baseline,
        profile_options=opts,
        no_code_message=(draft.response.strip().splitlines() or [None])[0]
        if draft.source.startswith("compiler") and draft.code is None
        else None,
    )
    duration = time.monotonic() - start
    verdict_dict = ev.verdict.to_dict()
    record = SampleRecord(
        problem=draft.problem,
        sample=draft.sample,
        source=draft.source,
        status=ev.status,
        correct=ev.correct,
        compiled=ev.compiled,
        speedups=ev.speedups,
        profile_status=(ev.profile or {}).get("status"),
        summary=ev.summary,
        duration_s=round(duration, 3),
        device="cuda" if verifier.device == "cuda" else "cpu",
        draft_s=round(draft_s, 3),
        wall_s=round(duration + draft.draft_s, 3),
        started_at=draft.drafted_at if draft.drafted_at is not None else round(started_at, 3),
        ended_at=round(time.time(), 3),
        memory=peak_memory(verdict_dict, ev.profile),
    )
    return Evaluated(record=record, verdict=verdict_dict, profile=ev.profile, draft=draft)


def peak_memory(*sources: Any) -> dict[str, float]:
    """The largest value of each memory key over the verdict / profile dicts given: a
    verdict's `evidence.memory`, a profile's `memory` and the verdicts a profile carries
    (`verdict`, `reverified`). Defensive: absent or malformed entries are skipped, so records
    written before a tool reported memory read as {}."""
    found: dict[str, float] = {}
    for src in sources:
        if not isinstance(src, dict):
            continue
        mems = [src.get("memory"), (src.get("evidence") or {}).get("memory")]
        for key in ("verdict", "reverified"):
            inner = src.get(key)
            if isinstance(inner, dict) and isinstance(inner.get("evidence"), dict):
                mems.append(inner["evidence"].get("memory"))
        for mem in mems:
            if not isinstance(mem, dict):
                continue
            for k, v in mem.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                if math.isfinite(v) and v >= 0 and v > found.get(k, -1.0):
                    found[str(k)] = float(v)
    return found


def _draft_compiler(verifier: Verifier, problem: Problem, draft: Draft) -> Draft:
    from agent.drafters import CompilerDrafter

    gpu_mb = verifier.gpu_mb(verifier.reference(problem)) if verifier.device == "cuda" else None
    cand = CompilerDrafter(verifier.sandbox, verifier.device).draft(
        problem.source, os.path.abspath(problem.path), gpu_mb=gpu_mb
    )
    return dataclasses.replace(
        draft, source="compiler", response=cand["response"], code=cand["code"]
    )


# ---------------------------------------------------------------------------------------------
# The output directory


class BenchDir:
    """OUT/bench.json, OUT/<problem>/prompt.txt, OUT/<problem>/<NN>/{response.txt, kernel.py,
    verdict.json, profile.json, sample.json}, OUT/report.{md,json}, plots."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def sample_dir(self, problem: str, sample: int) -> Path:
        return self.path / problem / f"{sample:02d}"

    def read_settings(self) -> dict[str, Any] | None:
        p = self.path / "bench.json"
        return json.loads(p.read_text()) if p.exists() else None

    def write_json(self, rel: str | Path, data: Any) -> None:
        write_atomic(self.path / rel, strict_json(data, indent=2) + "\n")

    def write_draft(self, d: Draft) -> None:
        sd = self.sample_dir(d.problem, d.sample)
        write_atomic(sd / "response.txt", d.response or "")
        if d.code:
            write_atomic(sd / "kernel.py", d.code)
        meta = {"source": d.source, "drafted_at": d.drafted_at, "draft_s": d.draft_s}
        write_atomic(sd / "draft.json", json.dumps(meta) + "\n")

    def read_draft(self, problem: str, sample: int) -> Draft | None:
        """A candidate drawn before an interruption but not yet evaluated (not asked again)."""
        sd = self.sample_dir(problem, sample)
        if not (sd / "draft.json").exists():
            return None
        meta = json.loads((sd / "draft.json").read_text())
        code = (sd / "kernel.py").read_text() if (sd / "kernel.py").exists() else None
        response = (sd / "response.txt").read_text() if (sd / "response.txt").exists() else ""
        return Draft(
            problem=problem,
            sample=sample,
            source=meta["source"],
            response=response,
            code=code,
            drafted_at=meta.get("drafted_at"),
            draft_s=float(meta.get("draft_s") or 0.0),
        )

    def write_evaluated(self, ev: Evaluated) -> None:
        d = ev.draft
        self.write_draft(d)  # a compiler draft is only known now
        sd = self.sample_dir(d.problem, d.sample)
        write_atomic(sd / "verdict.json", strict_json(ev.verdict, indent=2) + "\n")
        if ev.profile is not None:
            write_atomic(sd / "profile.json", strict_json(ev.profile, indent=2) + "\n")
        # sample.json last: its presence means "done".
        write_atomic(sd / "sample.json", json.dumps(ev.record.to_dict(), indent=2) + "\n")

    def done_samples(self, problem: str) -> dict[int, SampleRecord]:
        out: dict[int, SampleRecord] = {}
        pdir = self.path / problem
        if not pdir.is_dir():
            return out
        for sd in pdir.iterdir():
            if sd.is_dir() and sd.name.isdigit() and (sd / "sample.json").exists():
                rec = _read_record(sd, problem)
                if rec is not None:
                    if not rec.memory:  # written before the tools reported memory
                        rec.memory = peak_memory(
                            _read_json(sd / "verdict.json"), _read_json(sd / "profile.json")
                        )
                    out[int(sd.name)] = rec
        return out

    def problems_on_disk(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(
            p.name
            for p in self.path.iterdir()
            if p.is_dir()
            and (
                (p / "problem.json").exists()
                or any(c.is_dir() and c.name.isdigit() for c in p.iterdir())
            )
        )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_record(sd: Path, problem: str) -> SampleRecord | None:
    try:
        return SampleRecord.from_dict(json.loads((sd / "sample.json").read_text()))
    except (OSError, ValueError, TypeError):
        pass
    # sample.json unreadable: rebuild what the verdict says
    try:
        v = json.loads((sd / "verdict.json").read_text())
    except (OSError, ValueError):
        return None
    return SampleRecord(
        problem=problem,
        sample=int(sd.name),
        source="?",
        status=v["status"],
        correct=bool(v["correct"]),
        compiled=bool(v.get("compiled")),
        device=v.get("device", "cpu"),
    )


# ---------------------------------------------------------------------------------------------
# Running


def discover_problems(path: str | os.PathLike[str], only: Sequence[str] = ()) -> list[str]:
    p = Path(path)
    if p.is_file():
        files = [p]
    elif p.is_dir():
        files = sorted(
            f for f in p.glob("*.py") if f.name != "__init__.py" and not f.name.startswith(".")
        )
    else:
        raise BadInputError(f"problem directory not found: {path}")
    if only:
        wanted = set(only)
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise BadInputError(
                f"--only names problems not in {path}: {', '.join(sorted(missing))}"
            )
    if not files:
        raise BadInputError(f"no problem .py files in {path}")
    return [str(f) for f in files]


def run_bench(
    problems_path: str,
    cfg: BenchConfig,
    *,
    backend: Any = None,
    on_event: Event | None = None,
) -> dict[str, Any]:
    """Run (or resume) a benchmark into `cfg.out`; returns the report object."""
    emit = _safe(on_event)
    bdir = BenchDir(cfg.out)
    paths = discover_problems(problems_path, cfg.only)
    _check_resume(bdir, cfg)
    problems: dict[str, Problem] = {}
    errors: dict[str, str] = {}
    for p in paths:
        try:
            prob = read_problem(p)
        except BadInputError as exc:
            errors[Path(p).stem] = str(exc)
            continue
        problems[prob.name] = prob
    settings = {
        **cfg.settings(),
        "problems_path": os.path.abspath(problems_path),
        "problems": [Path(p).stem for p in paths],
    }
    prev = bdir.read_settings() or {}
    settings["started"] = prev.get("started") or time.strftime("%Y-%m-%dT%H:%M:%S")
    bdir.write_json("bench.json", settings)
    for name, prob in problems.items():
        bdir.write_json(
            Path(name) / "problem.json",
            {"name": name, "path": os.path.abspath(prob.path), "digest": prob.digest},
        )
    started = time.monotonic()
    interrupted = False
    try:
        if cfg.mode == "sample":
            errors.update(_run_sample_mode(problems, cfg, bdir, backend, emit))
        else:
            errors.update(_run_loop_mode(problems, cfg, bdir, backend, emit))
    except KeyboardInterrupt:
        # SIGINT (Ctrl-C, `timeout --signal=INT`): what is done is on disk; report it and stop
        # (sample mode: running candidates get cfg.stop_grace_s to finish, `_stop_running`).
        interrupted = True
        emit({"event": "interrupted"})
    elapsed = time.monotonic() - started
    if not interrupted:  # an interrupted run has not seen every problem: keep old errors
        for name, msg in errors.items():
            bdir.write_json(Path(name) / "error.json", {"error": msg})
        for name in problems:
            if name not in errors and (bdir.path / name / "error.json").exists():
                (bdir.path / name / "error.json").unlink()
    report = rebuild_report(bdir.path, elapsed_s=elapsed, interrupted=interrupted)
    emit({"event": "finish", "report": report})
    return report


def _check_resume(bdir: BenchDir, cfg: BenchConfig) -> None:
    prev = bdir.read_settings()
    if prev is None:
        return
    now = cfg.settings()
    diff = [k for k in _RESUME_KEYS if prev.get(k) != now.get(k)]
    if diff:
        raise BadInputError(
            f"{bdir.path} holds a benchmark with other settings ({', '.join(f'{k}: {prev.get(k)!r} -> {now.get(k)!r}' for k in diff)}); "
            "rerun with the same settings to resume, or choose another --out"
        )


def _make_backend(cfg: BenchConfig) -> Any:
    from agent.llm import backend_for

    return backend_for(cfg.agent)


def _run_sample_mode(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, backend: Any, emit: Event
) -> dict[str, str]:
    """Draw (in this thread, problem after problem: a replay script stays in order) and
    evaluate (in parallel) every candidate not yet done. Returns per-problem errors."""
    errors: dict[str, str] = {}
    n = cfg.per_problem
    work: dict[str, list[Draft]] = {}
    todo = {}
    if cfg.compiler_only:  # a problem that could not run last time waits behind the others
        order = sorted(problems, key=lambda name: (bdir.path / name / "error.json").exists())
        problems = {name: problems[name] for name in order}
    for name in problems:
        done = bdir.done_samples(name)
        missing = [i for i in range(n) if i not in done]
        todo[name] = missing
        emit({"event": "problem", "problem": name, "done": len(done), "todo": len(missing)})
    if not any(todo.values()):
        return errors
    llm = None
    if not cfg.compiler_only:
        llm = backend if backend is not None else _make_backend(cfg)

    def drafts_for(name: str) -> list[Draft]:
        prob = problems[name]
        drafts: list[Draft] = []
        need: list[int] = []
        for i in todo[name]:
            d = bdir.read_draft(name, i)
            if d is not None:
                drafts.append(d)
            else:
                need.append(i)
        if not need:
            return drafts
        if llm is None:
            return drafts + [Draft(problem=name, sample=i, source="compiler:pending") for i in need]
        from agent.drafters import draft_llm, first_prompt

        prompt = first_prompt(prob.source, cfg.agent, llm)
        _write_prompt(bdir, name, prompt)
        emit({"event": "drafting", "problem": name, "samples": len(need)})
        drafted_at, t0 = round(time.time(), 3), time.monotonic()
        cands = draft_llm(llm, prompt, len(need), cfg.agent)  # raises BackendError
        share = round((time.monotonic() - t0) / max(len(cands), 1), 3)
        for i, cand in zip(need, cands, strict=False):
            d = Draft(
                problem=name,
                sample=i,
                source=cand["source"],
                response=cand["response"],
                code=cand["code"],
                drafted_at=drafted_at,
                draft_s=share,
            )
            bdir.write_draft(d)
            drafts.append(d)
        if len(cands) < len(need):
            raise BackendError(f"the backend returned {len(cands)} of {len(need)} samples")
        return drafts

    if cfg.executor == "ray":
        for name in problems:
            if not todo[name]:
                continue
            try:
                work[name] = drafts_for(name)
            except TritonAgentError as exc:
                errors[name] = str(exc)
                emit({"event": "error", "problem": name, "message": str(exc)})
                if isinstance(exc, BackendError):
                    break  # the backend is gone: the rest stays to do (rerun resumes)
        errors.update(_evaluate_with_ray(problems, work, cfg, bdir, emit))
        return errors

    verifier = Verifier(cfg.verify_options())
    slots = verifier.sandbox.slots
    emit({"event": "start", "device": verifier.device, "slots": slots})
    lock = threading.Lock()
    stopping = threading.Event()

    def task(d: Draft) -> Evaluated | None:
        ev = evaluate_sample(
            verifier, problems[d.problem], d, protocol=cfg.protocol, baseline=cfg.agent.baseline
        )
        if stopping.is_set():  # its jobs may have been killed by the stop: not a verdict
            return None
        bdir.write_evaluated(ev)
        return ev

    pool = cf.ThreadPoolExecutor(max_workers=slots, thread_name_prefix="bench")
    futures: dict[cf.Future, Draft] = {}
    try:
        for name in problems:
            if not todo[name]:
                continue
            try:
                drafts = drafts_for(name)
            except TritonAgentError as exc:
                errors[name] = str(exc)
                emit({"event": "error", "problem": name, "message": str(exc)})
                if isinstance(exc, BackendError):
                    # Evaluate what was drawn; the rest stays to do (a rerun resumes).
                    drafts = [d for i in todo[name] if (d := bdir.read_draft(name, i))]
                    for d in drafts:
                        futures[pool.submit(task, d)] = d
                    break
                continue
            for d in drafts:
                futures[pool.submit(task, d)] = d
        for fut in cf.as_completed(futures):
            d = futures[fut]
            try:
                ev = fut.result()
            except TritonAgentError as exc:  # the problem itself (reference) cannot run
                with lock:
                    errors.setdefault(d.problem, str(exc))
                emit({"event": "error", "problem": d.problem, "message": str(exc)})
                continue
            if ev is not None:
                emit({"event": "sample", "record": ev.record.to_dict()})
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_running(futures, stopping, cfg.stop_grace_s, emit)
        raise
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return errors


def _stop_running(
    futures: Iterable[cf.Future], stopping: threading.Event, grace_s: float, emit: Event
) -> None:
    """After SIGINT: let the candidates being evaluated finish for up to `grace_s` seconds
    (a second SIGINT cuts that short), then discard what is still running and kill its job
    processes, so the process can exit now instead of when their timeouts expire."""
    running = [f for f in futures if not f.done()]
    emit({"event": "stopping", "running": len(running), "grace_s": grace_s})
    try:
        cf.wait(running, timeout=grace_s)
    except KeyboardInterrupt:
        pass
    stopping.set()
    # A task between two jobs may start another one: kill until every task has returned.
    deadline = time.monotonic() + 30.0
    while any(not f.done() for f in running) and time.monotonic() < deadline:
        _kill_job_processes()
        cf.wait(running, timeout=0.5)


def _kill_job_processes() -> None:
    """Kill the worker processes this process started (the sandbox's jobs). Each job leads its
    own session, so its process group goes too (whatever the candidate spawned)."""
    for proc in multiprocessing.active_children():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()  # not yet its own group leader


def _write_prompt(bdir: BenchDir, name: str, prompt: Any) -> None:
    if isinstance(prompt, list):
        text = "\n\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in prompt)
    else:
        text = str(prompt)
    write_atomic(bdir.path / name / "prompt.txt", text)


# -- Ray ----------------------------------------------------------------------------------------


def evaluate_problem(
    problem_path: str,
    problem_source: str,
    drafts: list[dict[str, Any]],
    verify_options: VerifyOptions,
    protocol: str,
    baseline: str = DEFAULT_BASELINE,
) -> list[dict[str, Any]]:
    """One problem's candidates, evaluated on this machine (a Ray task's body): a Verifier on
    the GPUs this process may use (Ray sets CUDA_VISIBLE_DEVICES), candidates in parallel."""
    from tools.problem import problem_from_source
    from tools.sandbox import Limits, Sandbox
    from tools.verify import resolve_device

    device = resolve_device(verify_options.device)
    limits = Limits(timeout_s=verify_options.timeout_s, memory_mb=verify_options.memory_mb)
    # On CUDA: every GPU this process sees (ids or UUIDs in CUDA_VISIBLE_DEVICES alike)
    sandbox = Sandbox(
        device=device, max_workers=1, limits=limits, slots_per_gpu=verify_options.jobs_per_gpu
    )
    verifier = Verifier(verify_options, sandbox=sandbox)
    problem = problem_from_source(problem_source, problem_path)
    ds = [Draft(**d) for d in drafts]
    with cf.ThreadPoolExecutor(max_workers=sandbox.slots) as pool:
        results = list(
            pool.map(
                lambda d: evaluate_sample(
                    verifier, problem, d, protocol=protocol, baseline=baseline
                ),
                ds,
            )
        )
    return [
        {
            "record": e.record.to_dict(),
            "verdict": e.verdict,
            "profile": e.profile,
            "draft": dataclasses.asdict(e.draft),
        }
        for e in results
    ]


def _ray_init(address: str | None) -> tuple[Any, bool]:
    """The `ray` module, initialised (a local instance without an address); and whether this
    call started it (the caller shuts it down again)."""
    try:
        import ray
    except ImportError as exc:
        raise BadInputError("--executor ray needs Ray: pip install 'triton-agent[ray]'") from exc
    started = not ray.is_initialized()
    if started:
        root = str(Path(__file__).resolve().parent.parent)
        if address:
            import agent
            import tools

            ray.init(
                address=address, runtime_env={"py_modules": [agent, tools]}, log_to_driver=False
            )
        else:
            path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)
            ray.init(
                runtime_env={"env_vars": {"PYTHONPATH": path}},
                log_to_driver=False,
                include_dashboard=False,
            )
    return ray, started


def _ray_resources(cfg: BenchConfig) -> dict[str, Any]:
    from tools.verify import resolve_device

    return {"num_gpus": 1} if resolve_device(cfg.agent.device) == "cuda" else {"num_cpus": 1}


def _evaluate_with_ray(
    problems: dict[str, Problem],
    work: dict[str, list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
) -> dict[str, str]:
    errors: dict[str, str] = {}
    if not work:
        return errors
    ray, started = _ray_init(cfg.ray_address)
    try:
        _ray_evaluate(ray, problems, work, cfg, bdir, emit, errors)
    finally:
        if started:
            ray.shutdown()
    return errors


def _ray_evaluate(
    ray: Any,
    problems: dict[str, Problem],
    work: dict[str, list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
    errors: dict[str, str],
) -> None:
    remote = ray.remote(evaluate_problem).options(**_ray_resources(cfg), max_retries=0)
    emit(
        {
            "event": "start",
            "device": "ray",
            "slots": int(
                ray.cluster_resources().get(
                    "GPU" if "num_gpus" in _ray_resources(cfg) else "CPU", 0
                )
            ),
        }
    )
    refs = {}
    for name, drafts in work.items():
        prob = problems[name]
        refs[
            remote.remote(
                os.path.abspath(prob.path),
                prob.source,
                [dataclasses.asdict(d) for d in drafts],
                cfg.verify_options(),
                cfg.protocol,
                cfg.agent.baseline,
            )
        ] = name
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        name = refs[ready[0]]
        try:
            results = ray.get(ready[0])
        except Exception as exc:  # RayTaskError wraps the task's exception
            cause = getattr(exc, "cause", None) or exc
            errors[name] = (
                str(cause).strip().splitlines()[-1] if str(cause).strip() else repr(cause)
            )
            emit({"event": "error", "problem": name, "message": errors[name]})
            continue
        for r in results:
            ev = Evaluated(
                record=SampleRecord.from_dict(r["record"]),
                verdict=r["verdict"],
                profile=r["profile"],
                draft=Draft(**r["draft"]),
            )
            bdir.write_evaluated(ev)
            emit({"event": "sample", "record": ev.record.to_dict()})


# -- loop mode ----------------------------------------------------------------------------------


def loop_problem(
    problem_path: str,
    agent_cfg: AgentConfig,
    runs_dir: str,
    backend: Any = None,
    on_event: Event | None = None,
) -> list[dict[str, Any]]:
    """Run the agent on one problem; return its attempts as sample entries (record, verdict,
    response, code). Used in-process and as a Ray task's body."""
    from agent.runner import run

    cfg = dataclasses.replace(agent_cfg, runs_dir=runs_dir, run_id="run")
    started_at, t0 = round(time.time(), 3), time.monotonic()
    result = run(problem_path, cfg, backend=backend, on_event=on_event)
    # The loop does not time its attempts apart: each gets an even share of the run.
    share = round((time.monotonic() - t0) / max(len(result["attempts"]), 1), 3)
    ended_at = round(time.time(), 3)
    name = Path(problem_path).stem
    device = result.get("device", "cpu")
    out = []
    for i, a in enumerate(result["attempts"]):
        ad = Path(result["run_dir"]) / "attempts" / f"{a['index']:02d}"
        meta = json.loads((ad / "attempt.json").read_text())
        speedups = {k: float(v) for k, v in (meta.get("speedups") or {}).items() if v}
        verdict = json.loads((ad / "verdict.json").read_text())
        rec = SampleRecord(
            problem=name,
            sample=i,
            source=meta["source"],
            status=meta["status"],
            correct=bool(meta["correct"]),
            compiled=bool(verdict.get("compiled")),
            speedups=speedups,
            summary=meta.get("summary") or "",
            device="cuda" if device == "cuda" else "cpu",
            profile_status=(meta.get("profile") or {}).get("status"),
            duration_s=share,
            wall_s=share,
            started_at=started_at,
            ended_at=ended_at,
            memory=peak_memory(verdict, meta.get("profile")),
        )
        out.append(
            {
                "record": rec.to_dict(),
                "verdict": verdict,
                "profile": meta.get("profile"),
                "draft": {
                    "problem": name,
                    "sample": i,
                    "source": meta["source"],
                    "response": (ad / "response.txt").read_text()
                    if (ad / "response.txt").exists()
                    else "",
                    "code": (ad / "kernel.py").read_text() if (ad / "kernel.py").exists() else None,
                },
            }
        )
    return out


def _loop_problem_ray(problem_path: str, agent_cfg: AgentConfig) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ta-bench-loop-") as tmp:
        return loop_problem(problem_path, agent_cfg, tmp)


def _run_loop_mode(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, backend: Any, emit: Event
) -> dict[str, str]:
    """One agent run per problem not yet done (OUT/<problem>/done.json). A problem interrupted
    mid-run starts over (its partial attempts are dropped)."""
    errors: dict[str, str] = {}
    agent_cfg = dataclasses.replace(cfg.agent, budget=cfg.samples, compiler_seed=cfg.compiler_seed)
    todo = []
    for name in problems:
        if (bdir.path / name / "done.json").exists():
            emit({"event": "problem", "problem": name, "done": 1, "todo": 0})
            continue
        for sd in (bdir.path / name).glob("[0-9]*"):
            shutil.rmtree(sd, ignore_errors=True)
        shutil.rmtree(bdir.path / name / "run", ignore_errors=True)
        todo.append(name)
        emit({"event": "problem", "problem": name, "done": 0, "todo": 1})

    def store(name: str, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            ev = Evaluated(
                record=SampleRecord.from_dict(e["record"]),
                verdict=e["verdict"],
                profile=e["profile"],
                draft=Draft(**e["draft"]),
            )
            bdir.write_evaluated(ev)
            emit({"event": "sample", "record": ev.record.to_dict()})
        bdir.write_json(Path(name) / "done.json", {"attempts": len(entries)})

    if cfg.executor == "ray":
        if agent_cfg.replies or agent_cfg.backend == "replay" or backend is not None:
            raise BadInputError(
                "--mode loop --executor ray builds the LLM backend inside each task; "
                "a replay script or an in-process backend cannot be shared that way"
            )
        ray, started = _ray_init(cfg.ray_address)
        try:
            remote = ray.remote(_loop_problem_ray).options(**_ray_resources(cfg), max_retries=0)
            refs = {remote.remote(os.path.abspath(problems[n].path), agent_cfg): n for n in todo}
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                name = refs[ready[0]]
                try:
                    store(name, ray.get(ready[0]))
                except Exception as exc:  # RayTaskError wraps the task's exception
                    cause = getattr(exc, "cause", None) or exc
                    errors[name] = str(cause)
                    emit({"event": "error", "problem": name, "message": str(cause)})
        finally:
            if started:
                ray.shutdown()
        return errors

    llm = backend if backend is not None else _make_backend(cfg)
    for name in todo:
        emit({"event": "drafting", "problem": name, "samples": cfg.samples})
        try:
            entries = loop_problem(
                problems[name].path, agent_cfg, str(bdir.path / name), backend=llm
            )
        except TritonAgentError as exc:
            errors[name] = str(exc)
            emit({"event": "error", "problem": name, "message": str(exc)})
            continue
        store(name, entries)
    return errors


# ---------------------------------------------------------------------------------------------
# The report (from files alone)


ProblemRows = list[tuple[str, list[SampleRecord], str | None, bool | None]]


def load_results(out: str | os.PathLike[str]) -> tuple[dict[str, Any], ProblemRows]:
    """OUT/'s settings and, per problem, (name, records, error, finished): what
    `compute_report` takes. Reads the files only; writes nothing."""
    bdir = BenchDir(out)
    settings = bdir.read_settings()
    if settings is None:
        raise BadInputError(f"{out} is not a benchmark directory (no bench.json)")
    names = settings.get("problems") or bdir.problems_on_disk()
    problems: ProblemRows = []
    for name in names:
        recs = sorted(bdir.done_samples(name).values(), key=lambda r: r.sample)
        err_file = bdir.path / name / "error.json"
        err = json.loads(err_file.read_text())["error"] if err_file.exists() else None
        finished = (bdir.path / name / "done.json").exists() if settings["mode"] == "loop" else None
        problems.append((name, recs, err, finished))
    return settings, problems


def rebuild_report(
    out: str | os.PathLike[str], *, elapsed_s: float | None = None, interrupted: bool = False
) -> dict[str, Any]:
    """Read OUT/ and write report.json, report.md and the plots; returns the report object.
    `interrupted`: the run was stopped (SIGINT) before it saw every problem."""
    bdir = BenchDir(out)
    settings, problems = load_results(out)
    report = compute_report(settings, problems)
    if elapsed_s is not None:
        report["elapsed_s"] = round(elapsed_s, 1)
    report["out"] = str(bdir.path)
    notes = report["notes"]
    if interrupted:
        report["interrupted"] = True
        report["status"] = "incomplete"
        notes.append("the run was interrupted: rerun the same command to resume")
    plots = write_plots(bdir.path, report)
    notes.extend(plots)
    bdir.write_json("report.json", report)
    write_atomic(bdir.path / "report.md", render_markdown(report))
    from agent.html_report import write_bench_html

    write_bench_html(bdir.path, report)  # report.html: one self-contained file
    return report


def compute_report(settings: dict[str, Any], problems: ProblemRows) -> dict[str, Any]:
    """The metrics. Pure: settings and, per problem, (name, records, error, finished) in; the
    report object out. `finished` is the loop's "run ended" mark (None in sample mode: there a
    problem is complete when it has all its candidates)."""
    mode = settings["mode"]
    per = int(settings.get("per_problem") or settings["samples"])
    ks = [int(k) for k in settings["ks"]]
    rows = []
    notes: list[str] = []
    status_total: Counter[str] = Counter()
    for name, recs, err, finished in problems:
        n = len(recs)
        c = sum(r.correct for r in recs)
        statuses = Counter(r.status for r in recs)
        status_total.update(statuses)
        best: dict[str, float | None] = {}
        for base in SPEEDUP_BASES:
            vals = [r.speedups[base] for r in recs if r.correct and r.speedups.get(base)]
            best[base] = max(vals) if vals else None
        if mode == "loop":
            free = any(r.correct for r in recs if r.source in ("compiler", "given"))
            drafted = [r.correct for r in recs if r.source not in ("compiler", "given")]
            pk = {
                str(k): (1.0 if solved_within(drafted, k, free) else 0.0) if n else None for k in ks
            }
        else:
            pk = {str(k): pass_at_k(n, c, k) if 0 < n and k <= n else None for k in ks}
        per_sample_fast = {}
        for p in FAST_P:
            hits = sum(
                1 for r in recs if r.correct and (p <= 0 or (r.speedups.get("eager") or 0) > p)
            )
            per_sample_fast[_pkey(p)] = hits / n if n else None
        rows.append(
            {
                "problem": name,
                "n": n,
                "correct": c,
                "complete": (finished if finished is not None else n >= per) and err is None,
                "error": err,
                "pass_at_k": pk,
                "statuses": dict(sorted(statuses.items())),
                "best_speedup": best,
                "fast_p_per_sample": per_sample_fast,
                "outcome": problem_outcome(recs, err),
                **problem_cost(recs),
                "samples": [r.to_dict() for r in recs],
            }
        )
    timed = any(r["best_speedup"]["eager"] is not None for r in rows)
    device = next((s["device"] for r in rows for s in r["samples"]), None)
    solved = [r["correct"] > 0 for r in rows]
    bests = [r["best_speedup"]["eager"] for r in rows]
    pass_k: dict[str, float | None] = {}
    for k in ks:
        vals = [r["pass_at_k"][str(k)] for r in rows]
        if rows and all(v is not None for v in vals):
            pass_k[str(k)] = sum(vals) / len(vals)
        else:
            pass_k[str(k)] = None
            short = [r["problem"] for r, v in zip(rows, vals, strict=True) if v is None]
            notes.append(
                f"pass@{k} not reported: {len(short)} problem(s) have fewer than {k} "
                f"evaluated candidates ({', '.join(short[:5])})"
            )
    fast = {}
    fast_compile = {}
    fast_best = {}
    fast_ps = {}
    bests_compile = [r["best_speedup"]["compile"] for r in rows]
    bests_best = [r["best_speedup"]["best"] for r in rows]
    for p in FAST_P:
        if p > 0 and not timed:
            continue
        fast[_pkey(p)] = fast_p(bests, solved, p) if rows else None
        fast_compile[_pkey(p)] = fast_p(bests_compile, solved, p) if rows else None
        fast_best[_pkey(p)] = fast_p(bests_best, solved, p) if rows else None
        vals = [r["fast_p_per_sample"][_pkey(p)] for r in rows if r["n"]]
        fast_ps[_pkey(p)] = sum(vals) / len(vals) if vals else None
    if not timed:
        why = (
            "on the CPU speedups are unavailable (Triton interpreter timings are not speed)"
            if device in (None, "cpu")
            else "no correct kernel was timed"
        )
        notes.append(f"only fast_0 (= the correctness rate) is reported: {why}")
    geo = {}
    for base in SPEEDUP_BASES:
        vals = [r["best_speedup"][base] for r in rows if r["best_speedup"][base] is not None]
        geo[base] = {"value": geomean(vals), "problems": len(vals)}
    incomplete = [r["problem"] for r in rows if not r["complete"]]
    outcomes = Counter(r["outcome"] for r in rows)
    times = [r["time_s"] for r in rows if r["time_s"] is not None]
    peaks = {
        where: [r[f"peak_{where}_mb"] for r in rows if r[f"peak_{where}_mb"] is not None]
        for where in ("host", "gpu")
    }
    if incomplete:
        notes.append(
            f"{len(incomplete)} problem(s) incomplete or failed: {', '.join(incomplete)} "
            "(rerun the same command to resume)"
        )
    if mode == "loop":
        notes.append(
            "loop mode: pass@k is success@k, a correct kernel among the first k "
            "candidates the agent drafted with feedback (not the unbiased estimator)"
        )
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "command": "bench",
        "status": "ok" if rows and not incomplete else "incomplete",
        "settings": settings,
        "device": device,
        "timed": timed,
        "metrics": {
            "pass_at_k": pass_k,
            "fast_p": fast,
            "fast_p_compile": fast_compile,
            "fast_p_best": fast_best,
            "fast_p_per_sample": fast_ps,
            "correct_rate": sum(solved) / len(rows) if rows else None,
            "geomean_speedup": geo,
            "statuses": dict(sorted(status_total.items())),
            "outcomes": dict(sorted(outcomes.items())),
            "time_per_problem_s": {
                "median": _round(percentile(times, 0.5)),
                "p90": _round(percentile(times, 0.9)),
                "total": _round(sum(times)) if times else None,
                "problems": len(times),
            },
            "peak_memory_mb": {
                where: {
                    "median": _round(percentile(vals, 0.5)),
                    "max": _round(max(vals)) if vals else None,
                    "problems": len(vals),
                }
                for where, vals in peaks.items()
            },
        },
        "totals": {
            "problems": len(rows),
            "complete": len(rows) - len(incomplete),
            "no_verdict": sum(1 for r in rows if r["n"] == 0),
            "candidates": sum(r["n"] for r in rows),
            "correct_candidates": sum(r["correct"] for r in rows),
        },
        "problems": rows,
        "notes": notes,
    }


def problem_outcome(recs: Sequence[SampleRecord], err: str | None) -> str:
    """One status per problem: `ok` (a correct candidate, not slower than eager where timed),
    `slower` (correct ones, all slower), else the failing status most of its candidates got
    (the earliest on a tie); with no verdict at all, `error` (the problem could not run) or
    `incomplete` (not reached yet)."""
    if not recs:
        return "error" if err else "incomplete"
    correct = [r.status for r in recs if r.correct]
    if correct:
        return "slower" if all(s == "slower" for s in correct) else "ok"
    counts = Counter(r.status for r in recs)
    return max(counts, key=lambda s: (counts[s], -[r.status for r in recs].index(s)))


def problem_cost(recs: Sequence[SampleRecord]) -> dict[str, float | None]:
    """What a problem took: `time_s`, the sum of its candidates' draft + verify + time;
    `span_s`, from the first one's start to the last one's end (None where a record lacks
    them, e.g. written by an older version; over a resumed run it includes the pause);
    `peak_host_mb` / `peak_gpu_mb`, the largest peak memory any of its candidates reported."""
    time_s = sum(r.wall_s or r.duration_s for r in recs) if recs else None
    starts = [r.started_at for r in recs if r.started_at is not None]
    ends = [r.ended_at for r in recs if r.ended_at is not None]
    span = max(ends) - min(starts) if recs and len(starts) == len(ends) == len(recs) else None
    out: dict[str, float | None] = {"time_s": _round(time_s), "span_s": _round(span)}
    for where, key in (("host", "host_peak_mb"), ("gpu", "gpu_peak_mb")):
        vals = [r.memory[key] for r in recs if isinstance(r.memory.get(key), (int, float))]
        out[f"peak_{where}_mb"] = _round(max(vals)) if vals else None
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation between order statistics (numpy's
    default); None for no values."""
    vals = sorted(values)
    if not vals:
        return None
    pos = q * (len(vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def _round(v: float | None, nd: int = 1) -> float | None:
    return None if v is None else round(v, nd)


def _pkey(p: float) -> str:
    return f"{p:g}"


def render_markdown(r: dict[str, Any]) -> str:
    s = r["settings"]
    m = r["metrics"]
    who = s["backend"] + (f" ({s['model']})" if s.get("model") else "")
    lines = [
        f"# triton-agent bench: {s.get('problems_path', '')}",
        "",
        f"Mode **{s['mode']}**, {s['per_problem']} candidate(s) per problem, backend {who}, "
        f"temperature {s['temperature']}, top_p {s['top_p']}; protocol **{s['protocol']}** "
        f"({s['trials']} trials, tolerance {s['tolerance_preset']}"
        + (f", atol {s['atol']}" if s.get("atol") is not None else "")
        + (f", rtol {s['rtol']}" if s.get("rtol") is not None else "")
        + f", policy {s['policy']}); device {r['device'] or '-'}.",
        "",
        f"Problems: {r['totals']['problems']} ({r['totals']['complete']} complete), candidates "
        f"evaluated: {r['totals']['candidates']}, correct: {r['totals']['correct_candidates']}"
        + (f", wall time {r['elapsed_s']:.0f} s." if r.get("elapsed_s") is not None else "."),
        "",
    ]
    label = "success@k (loop)" if s["mode"] == "loop" else "pass@k"
    lines += [
        f"| {label} | " + " | ".join(f"k={k}" for k in m["pass_at_k"]) + " |",
        "|---|" + "---|" * len(m["pass_at_k"]),
        "| | " + " | ".join(_pct(v) for v in m["pass_at_k"].values()) + " |",
        "",
    ]
    lines += [
        "| fast_p | " + " | ".join(f"p={p}" for p in m["fast_p"]) + " |",
        "|---|" + "---|" * len(m["fast_p"]),
        "| any candidate | " + " | ".join(_pct(v) for v in m["fast_p"].values()) + " |",
        "| per sample | " + " | ".join(_pct(v) for v in m["fast_p_per_sample"].values()) + " |",
    ]
    if r["timed"] and m.get("fast_p_compile"):
        lines.append(
            "| any candidate, over torch.compile | "
            + " | ".join(_pct(v) for v in m["fast_p_compile"].values())
            + " |"
        )
    if r["timed"] and m.get("fast_p_best"):
        lines.append(
            "| any candidate, over the better of the two | "
            + " | ".join(_pct(v) for v in m["fast_p_best"].values())
            + " |"
        )
    lines.append("")
    g = m["geomean_speedup"]
    lines += [
        "Geometric-mean speedup of the best correct kernel per problem: "
        + "; ".join(
            f"over {BASE_NAMES[b]}: "
            + (f"{g[b]['value']:.2f}x ({g[b]['problems']} problems)" if g[b]["value"] else "n/a")
            for b in SPEEDUP_BASES
            if b in g
        ),
        "",
    ]
    lines += [
        "Statuses (candidates): "
        + (", ".join(f"{k} {v}" for k, v in m["statuses"].items()) or "-"),
        "",
        "Problems by outcome: "
        + (", ".join(f"{k} {v}" for k, v in m["outcomes"].items()) or "-")
        + f"; no verdict yet: {r['totals']['no_verdict']}.",
        "",
    ]
    t = m["time_per_problem_s"]
    mem = m["peak_memory_mb"]
    lines += [
        f"Time per problem (draft + verify + time): median {_num(t['median'], ' s')}, "
        f"p90 {_num(t['p90'], ' s')}, total {_num(t['total'], ' s')} ({t['problems']} problems). "
        "Peak memory per problem: "
        + "; ".join(
            f"{label} median {_num(mem[w]['median'], ' MB')}, max {_num(mem[w]['max'], ' MB')} "
            f"({mem[w]['problems']} problems)"
            for w, label in (("host", "host"), ("gpu", "GPU"))
        )
        + ".",
        "",
    ]
    one = "success@1" if s["mode"] == "loop" else "pass@1"
    lines += [
        f"| problem | n | correct | {one} | best vs eager | best vs compile | best vs better "
        "| time s | span s | host MB | GPU MB | statuses |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in r["problems"]:
        st = ", ".join(f"{k}×{v}" for k, v in p["statuses"].items())
        if p["error"]:
            st = (
                (st + "; " if st else "")
                + "error: "
                + p["error"].splitlines()[0][:100].replace("|", "\\|")
            )
        b = p["best_speedup"]
        lines.append(
            f"| {p['problem']} | {p['n']} | {p['correct']} | {_pct(p['pass_at_k'].get('1'))} | "
            f"{_x(b['eager'])} | {_x(b['compile'])} | {_x(b.get('best'))} | {_num(p['time_s'])} | "
            f"{_num(p['span_s'])} | {_num(p['peak_host_mb'], nd=0)} | "
            f"{_num(p['peak_gpu_mb'], nd=0)} | {st or '-'} |"
        )
    lines.append("")
    for n in r["notes"]:
        lines.append(f"Note: {n}")
    lines.append("")
    lines.append(
        "pass@k: unbiased estimator 1 - C(n-c,k)/C(n,k) (Chen et al. 2021), averaged over "
        "problems. fast_p: fraction of problems with a correct candidate whose speedup over "
        "eager is > p (fast_0 = correctness rate); 'per sample' averages over each problem's "
        "candidates (the single-sample expectation). time s: the problem's candidates' draft + "
        "verify + time, summed (waits for a GPU slot included); span s: first start to last "
        "end; host/GPU MB: the largest peak memory its verification and timing jobs reported."
    )
    return "\n".join(lines) + "\n"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _num(v: float | None, unit: str = "", nd: int = 1) -> str:
    return "-" if v is None else f"{v:.{nd}f}{unit}"


def write_plots(out: Path, r: dict[str, Any]) -> list[str]:
    """passk.png and speedup.png; returns notes about plots not drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["plots not drawn: matplotlib is not installed (pip install 'triton-agent[plot]')"]
    notes = []
    rows = [p for p in r["problems"] if p["n"]]
    if rows:
        nmax = min(p["n"] for p in rows)
        ks = list(range(1, nmax + 1))
        ys = []
        for k in ks:
            if r["settings"]["mode"] == "loop":
                vals = []
                for p in rows:
                    s = p["samples"]
                    free = any(x["correct"] for x in s if x["source"] in ("compiler", "given"))
                    drafted = [x["correct"] for x in s if x["source"] not in ("compiler", "given")]
                    vals.append(1.0 if solved_within(drafted, k, free) else 0.0)
            else:
                vals = [pass_at_k(p["n"], p["correct"], k) for p in rows]
            ys.append(100 * sum(vals) / len(vals))
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(ks, ys, marker="o")
        ax.set_xlabel("k")
        ax.set_ylabel("success@k (%)" if r["settings"]["mode"] == "loop" else "pass@k (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"{r['settings']['mode']} mode, {len(rows)} problems")
        ax.grid(alpha=0.3)
        _save(fig, plt, out / "passk.png")
    speeds = {
        b: sorted(v for p in rows if (v := p["best_speedup"][b]) is not None)
        for b in ("eager", "compile")
    }
    if speeds["eager"] or speeds["compile"]:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for b, vals in speeds.items():
            if vals:
                ax.plot(
                    range(1, len(vals) + 1),
                    vals,
                    marker="o",
                    linestyle="",
                    label=f"over {'torch.compile' if b == 'compile' else b}",
                )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("problem (sorted by speedup)")
        ax.set_ylabel("best correct kernel's speedup")
        ax.legend()
        _save(fig, plt, out / "speedup.png")
    else:
        notes.append("speedup.png not drawn: no correct kernel was timed")
    return notes


def _save(fig: Any, plt: Any, path: Path) -> None:
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)


def _safe(on_event: Event | None) -> Event:
    def emit(e: dict[str, Any]) -> None:
        if on_event is None:
            return
        try:
            on_event(e)
        except Exception:  # progress display must never break a run
            log.debug("progress callback failed", exc_info=True)

    return emit


def default_out() -> str:
    return os.path.join(
        os.environ.get("TRITON_AGENT_RUNS", "runs"), f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    )


__all__ = [
    "BenchConfig",
    "BenchDir",
    "Draft",
    "SampleRecord",
    "compute_report",
    "evaluate_sample",
    "fast_p",
    "geomean",
    "load_results",
    "pass_at_k",
    "peak_memory",
    "percentile",
    "problem_cost",
    "problem_outcome",
    "rebuild_report",
    "run_bench",
]
