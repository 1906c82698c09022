"""A candidate waiting for evaluation (`Draft`), its evaluated record (`SampleRecord`), and
`evaluate_sample`: the one code path from a draft to a record for every executor, through
`tools.orchestrate.evaluate`."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

import tools.orchestrate.evaluate
from agent.bench.config import profile_options
from tools.checks.roofline import slowdown_reason
from tools.core.code_version import code_version
from tools.core.problem import Problem
from tools.orchestrate.evaluate import DEFAULT_BASELINE
from tools.orchestrate.verify import Verifier

log = logging.getLogger(__name__)


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
    limit: str = ""
    """What limits a correct, timed candidate (`tools.checks.roofline.slowdown_reason`): how close it and
    each baseline get to the roof that bounds the problem."""
    memory: dict[str, float] = field(default_factory=dict)
    """Peak memory seen (`host_peak_mb`, `gpu_peak_mb`, ...): the largest value of each key in
    the verdict's `evidence.memory` and the profile's `memory` (`peak_memory`)."""
    precision: str = ""
    """The tl.dot input precisions of the candidate's GEMM template and convolution calls
    (`code_precision`: "tf32x3", "bf16x3, tf32x3", ...); empty where it makes neither call."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds by phase (`phase_seconds`): the draft job's own phases (`draft.<phase>`, from its
    notes), the verification (`verify`) and its candidate job's stages (`candidate.<stage>`), the
    timing job's (`profile.<stage>`): where a network's minutes went (issue 33)."""
    code: str = ""
    """The version of this project's code that evaluated it (`tools.core.code_version`): a
    report says whether its verdicts come from one version (issue 35); "" in older records."""

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


def evaluate_sample(
    verifier: Verifier,
    problem: Problem,
    draft: Draft,
    *,
    protocol: str = "ours",
    baseline: str = DEFAULT_BASELINE,
    profile_opts: Any = None,
) -> Evaluated:
    """Evaluate a candidate (`tools.orchestrate.evaluate`, the one evaluation path). A compiler draft still
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
    ev = tools.orchestrate.evaluate.evaluate(
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
        limit=(slowdown_reason(ev.profile) or "") if ev.correct else "",
        precision=code_precision(draft.code),
        phases=phase_seconds(draft_s, draft.response, verdict_dict, ev.profile),
        code=code_version(),
    )
    return Evaluated(record=record, verdict=verdict_dict, profile=ev.profile, draft=draft)


def code_precision(code: str | None) -> str:
    """The tl.dot input precisions a candidate's `gemm(...)` and `triton_convolution(...)` calls
    use (`tools.compile.tune.precisions`), each once, in call order; "" for code without such calls or
    code that does not parse."""
    if not code:
        return ""
    from tools.compile.tune import precisions

    try:
        return ", ".join(dict.fromkeys(precisions(code)))
    except (SyntaxError, ValueError):
        return ""


_DRAFT_PHASES = re.compile(r"(?:(sized path): )?(\w+) draft took ([\d.]+) s: (.*)")
_PHASE = re.compile(r"([A-Za-z][\w -]*?) ([\d.]+) s\b")
_DRAFT_STOPPED = re.compile(r"(?:(sized path): )?(\w+) draft stopped ([\d.]+) s\b")


def phase_seconds(
    draft_s: float, response: str, verdict: dict[str, Any], profile: dict[str, Any] | None
) -> dict[str, float]:
    """Where one candidate's time went: `draft` (the draft job, as the bench saw it) and the
    phases its notes give ("dynamic draft took 14.4 s: reference forward 0.2 s, Inductor
    14.2 s, ..." -> `draft.dynamic.Inductor`), `verify` and the candidate job's stages
    (`candidate.import`, `candidate.runs`, `candidate.aot`), the timing job's
    (`profile.baselines_s`, ...), and the time a pausable draft was stopped for timing jobs
    (`draft.dynamic.stopped`: its phases count working time only). Absent or malformed entries
    are skipped."""
    out: dict[str, float] = {}
    if draft_s:
        out["draft"] = round(float(draft_s), 3)
    for line in (response or "").splitlines():
        m = re.match(r"sized path took ([\d.]+) s$", line.strip())
        if m:
            out["draft.sized"] = float(m.group(1))
            continue
        m = _DRAFT_STOPPED.search(line)  # a pausable draft's time stopped (not in its phases)
        if m:
            out[f"draft.{'sized.' if m.group(1) else ''}{m.group(2)}.stopped"] = float(m.group(3))
            continue
        m = _DRAFT_PHASES.search(line)
        if not m:
            continue
        what = f"draft.{'sized.' if m.group(1) else ''}{m.group(2)}"
        out[what] = float(m.group(3))
        for name, secs in _PHASE.findall(m.group(4)):
            out[f"{what}.{name.strip()}"] = float(secs)
    if isinstance(verdict, dict):
        if isinstance(verdict.get("duration_s"), (int, float)):
            out["verify"] = float(verdict["duration_s"])
        timings = (verdict.get("evidence") or {}).get("timings") or {}
        for k, v in timings.items() if isinstance(timings, dict) else ():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[f"candidate.{k}"] = round(float(v), 3)
    if isinstance(profile, dict):
        timings = profile.get("timings") or {}
        for k, v in timings.items() if isinstance(timings, dict) else ():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[f"profile.{k}"] = round(float(v), 3)
    return out


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

    # The problem's check first, on every device: it refuses a problem too large for the CPU
    # from shapes alone, where the drafting job would build its inputs for real (a KernelBench
    # problem of 6.4 GB inputs peaked at 13 GB before the refusal). Cached: the evaluation
    # that follows does not check it again.
    reference = verifier.reference(problem)
    gpu_mb = verifier.gpu_mb(reference) if verifier.device == "cuda" else None
    cand = CompilerDrafter(
        verifier.sandbox, verifier.device, generalize=verifier.options.generalize
    ).draft(problem.source, os.path.abspath(problem.path), gpu_mb=gpu_mb)
    return dataclasses.replace(
        draft, source="compiler", response=cand["response"], code=cand["code"]
    )
