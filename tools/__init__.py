"""Evaluation tools: problem loading, sandboxed execution, compile, verify, profile.

In wings, by role and by the process the code runs in (docs/architecture.md draws them):
`orchestrate` (a verification or a profile, driven from the agent's process), `job` (what runs
inside a sandboxed job process), `checks` (the checks the jobs and the orchestration apply),
`sandboxing` (a fresh process per job, limits, slots, isolation), `kernels` (Triton kernel
libraries that drafts copy), `compile` (ahead-of-time compilation, tuning variants), `core` (the
contracts every wing shares) and `draft` (the compiler drafter).

Plain functions and typed results; no LLM, no graph. Usable without `agent/`.
"""

from tools.checks.compare import Tolerance
from tools.core.errors import (
    BadInputError,
    ProblemError,
    SandboxError,
    TooLargeForCPUError,
    TritonAgentError,
)
from tools.core.problem import Problem, read_problem
from tools.core.results import STATUSES, Verdict
from tools.orchestrate.verify import Verifier, VerifyOptions, verify
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import Sandbox

__all__ = [
    "STATUSES",
    "BadInputError",
    "Limits",
    "Problem",
    "ProblemError",
    "Sandbox",
    "SandboxError",
    "Tolerance",
    "TooLargeForCPUError",
    "TritonAgentError",
    "Verdict",
    "Verifier",
    "VerifyOptions",
    "read_problem",
    "verify",
]
