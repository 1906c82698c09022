"""Run configuration: a keyword-only dataclass built from CLI flags, with environment fallbacks.

Configuration is what the user chose; counters and results live in the graph state
(`agent.state`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any

from agent.llm import env_base_url
from agent.options import DEFAULTS, check
from tools.checks.compare import Tolerance
from tools.compile.cuda_targets import parse_target
from tools.core.errors import BadInputError
from tools.orchestrate.verify import VerifyOptions

CUDA_ARCHES = frozenset({70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121})
"""Compute capabilities Triton's bundled ptxas compiles for (3.x: `ptxas` below sm_90,
`ptxas-blackwell` from it). `GPUTarget` takes any number; an unknown one fails only in ptxas,
on every candidate, so it is refused up front."""

_RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")


def check_run_id(run_id: str, flag: str = "--run-id") -> str:
    """A run id is one directory name under the runs root: letters, digits, `-`, `_`, `.`; at
    most 100 characters; not `.` or with `..` (it would name a directory outside the root)."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id or run_id == ".":
        raise BadInputError(
            f"{flag} {run_id!r} is not a run id: use 1-100 letters, digits, '-', '_' or '.'"
            " (no '..', no '/')"
        )
    return run_id


def _env(name: str, default: Any = None) -> Any:
    return os.environ.get(name, default)


@dataclass(kw_only=True)
class AgentConfig:
    """Everything a run needs to know that is not state. Defaults, ranges and help come from
    the option table (`agent.options`)."""

    budget: int = DEFAULTS["budget"]
    """Candidate kernels to evaluate (the compiler seed, attempt 0, is not counted)."""
    samples_per_round: int = DEFAULTS["samples_per_round"]
    """Candidates drafted per round and evaluated in parallel."""
    backend: str = DEFAULTS["backend"]
    """auto | compiler | openai | vllm | hf | replay | langchain."""
    model: str | None = field(default_factory=lambda: _env("TRITON_AGENT_MODEL"))
    base_url: str | None = field(default_factory=lambda: env_base_url())
    """Default: $TRITON_AGENT_BASE_URL, else $OPENAI_BASE_URL (`agent.llm.BASE_URL_ENV_VARS`)."""
    api_key: str | None = None
    replies: str | None = None
    """JSONL reply script for the replay backend."""
    prompt_format: str = DEFAULTS["prompt_format"]
    """auto | completion | chat: raw KernelLLM-style prompt or chat messages."""
    prompt_template: str | None = None
    temperature: float = DEFAULTS["temperature"]
    top_p: float = DEFAULTS["top_p"]
    max_tokens: int = DEFAULTS["max_tokens"]
    compiler_seed: bool = DEFAULTS["compiler_seed"]
    """With an LLM backend, evaluate torch.compile's Triton as attempt 0 (the version to beat)."""
    tune: bool = DEFAULTS["tune"]
    """On a GPU, search launch parameters of the best correct kernel without the LLM."""
    tune_trials: int = DEFAULTS["tune_trials"]
    """Most launch-parameter variants the tuner evaluates."""
    target_speedup: float = DEFAULTS["target_speedup"]
    baseline: str = DEFAULTS["baseline"]
    """The bar: `best` (the faster of eager and torch.compile), `eager` or `compile`."""
    time_limit_s: float | None = None
    runs_dir: str = field(default_factory=lambda: _env("TRITON_AGENT_RUNS", "runs"))
    run_id: str | None = None
    # verification
    trials: int = DEFAULTS["trials"]
    seed: int = DEFAULTS["seed"]
    atol: float | None = None
    rtol: float | None = None
    tolerance_preset: str = DEFAULTS["tolerance_preset"]
    policy: str = DEFAULTS["policy"]
    reference_numerics: str = DEFAULTS["reference_numerics"]
    """exact | pytorch-default: what the judge's reference computes in (TF32 convolutions)."""
    precision: str = DEFAULTS["precision"]
    """fp32 | bf16 | fp16: the dtype the problem runs at (`tools.core.problem_dtype`)."""
    device: str = DEFAULTS["device"]
    timeout_s: float = DEFAULTS["timeout_s"]
    aot_target: str | None = DEFAULTS["aot_target"]
    allow_large: bool = False
    memory_mb: int | None = None
    """Host memory limit of each verification job in MB; None derives it from the problem."""
    generalize: bool = False
    """Also verify each candidate at other sizes (hard-coded shapes fail)."""
    input_scales: str | None = None
    """The scale trials (`VerifyOptions.input_scales`): factors as `--input-scales` spells them
    ("100,1e4", "none"), or a tuple of them; None: the tolerance preset's own."""
    jobs_per_gpu: int = DEFAULTS["jobs_per_gpu"]
    """GPU: verification jobs at once per GPU; timing jobs always have their GPU alone."""

    def __post_init__(self) -> None:
        check(self)  # every range and choice, from the option table
        if self.aot_target is not None:
            self._check_aot_target()
        if self.run_id is not None:
            check_run_id(self.run_id)
        if self.prompt_template and not os.path.isfile(self.prompt_template):
            raise BadInputError(f"prompt template not found: {self.prompt_template}")
        self.verify_options()  # validates tolerances, policy, device

    def _check_aot_target(self) -> None:
        try:
            _, cap = parse_target(self.aot_target)
        except ValueError:
            cap = None
        if cap not in CUDA_ARCHES:
            known = ", ".join(f"sm_{c}" for c in sorted(CUDA_ARCHES))
            raise BadInputError(
                f"--target {self.aot_target!r} is not a CUDA architecture Triton compiles for;"
                f" use one of {known}, or none"
            )

    def verify_options(self) -> VerifyOptions:
        shared = {name: getattr(self, name) for name in VERIFY_FIELDS if name not in TOLERANCE}
        tolerance = Tolerance(atol=self.atol, rtol=self.rtol, preset=self.tolerance_preset)
        return VerifyOptions(tolerance=tolerance, **shared)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("api_key", None)  # never written to disk
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> AgentConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        merged = {k: v for k, v in data.items() if k in names}
        merged.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**merged)


TOLERANCE = ("atol", "rtol", "tolerance_preset")
"""The fields that make `VerifyOptions.tolerance`."""
VERIFY_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(AgentConfig)
    if f.name in TOLERANCE or f.name in {v.name for v in dataclasses.fields(VerifyOptions)}
)
"""The fields that say how a candidate is verified (what `agent.verify` accepts): the tolerance's
and those `VerifyOptions` shares, so a field added to both is passed on without more code."""
