"""What a benchmark run was asked to do (`BenchConfig`, written to OUT/bench.json) and the
timing options of its protocol."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.config import AgentConfig
from tools.core.errors import BadInputError
from tools.orchestrate.evaluate import DEFAULT_BASELINE
from tools.orchestrate.verify import VerifyOptions

log = logging.getLogger(__name__)

BENCH_SCHEMA_VERSION = 1
MODES = ("sample", "loop")
PROTOCOLS = ("ours", "kernelbench")
EXECUTORS = ("thread", "ray")
KERNELBENCH_TRIALS = 5
KERNELBENCH_TIMING_TRIALS = 100

Event = Callable[[dict[str, Any]], None]


@dataclass(kw_only=True)
class BenchConfig:
    """What a benchmark run was asked to do (written to OUT/bench.json)."""

    mode: str = "sample"
    samples: int = 20
    """Candidates per problem (sample mode) or the loop's budget (loop mode)."""
    ks: tuple[int, ...] | None = None
    """pass@k values; default 1, 10, 20 (those not above the candidates per problem)."""
    protocol: str = "ours"
    """`ours` (tools.orchestrate.verify defaults) or `kernelbench` (5 trials, atol=rtol=1e-2, 100 timing
    trials against eager)."""
    executor: str = "thread"
    ray_address: str | None = None
    out: str
    only: tuple[str, ...] = ()
    """Problem names (file stems) to run; empty for all."""
    compiler_seed: bool = False
    """Loop mode: also evaluate torch.compile's Triton as a free attempt 0."""
    loop_jobs: int | None = None
    """Loop mode (thread executor): problems whose loops run at once, all sharing one
    Verifier's slots (so verification and timing jobs never exceed what sample mode runs).
    None: the number of slots, or 1 with a replay script (its replies are taken in order)."""
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
        if self.loop_jobs is not None and (
            isinstance(self.loop_jobs, bool)
            or not isinstance(self.loop_jobs, int)
            or self.loop_jobs < 1
        ):
            raise BadInputError("--loop-jobs must be a positive integer")
        if self.loop_jobs is not None and self.mode != "loop":
            raise BadInputError("--loop-jobs applies to --mode loop only")
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
            "precision": a.precision,
            "reference_numerics": a.reference_numerics,
            "seed": a.seed,
            "timeout_s": a.timeout_s,
            "aot_target": a.aot_target,
            # the scale trials every verification ran (`--input-scales`, issue 35)
            "input_scales": list(self.verify_options().scale_trials()),
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
    "precision",
    "reference_numerics",
    "seed",
    "temperature",
    "top_p",
    "prompt_format",
)


RESUME_DEFAULTS = {"precision": "fp32", "reference_numerics": "exact"}
"""What a resume key meant in a bench written before the key was recorded (issue 36's precision
and reference numerics: every bench before them ran at fp32 against the exact reference), so
such a bench still resumes."""


def profile_options(protocol: str, baseline: str = DEFAULT_BASELINE) -> Any:
    """ProfileOptions for the protocol (KernelBench's bar is eager) and bar; None when
    tools.orchestrate.profile is not available."""
    try:
        from tools.orchestrate.profile import ProfileOptions
    except ImportError:
        return None
    if protocol == "kernelbench":
        # ours as always, and beside it KernelBench's own method (100 event-timed trials after
        # warm-up, mean and std) against eager: `profile.kernelbench`, `eager_kernelbench`
        return ProfileOptions(baseline="eager", kernelbench=True)
    return ProfileOptions(baseline=baseline)
