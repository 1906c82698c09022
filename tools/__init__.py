"""Evaluation tools: problem loading, sandboxed execution, compile, verify, profile.

Plain functions and typed results; no LLM, no graph. Usable without `agent/`.
"""

from tools.compare import Tolerance
from tools.errors import (
    BadInputError,
    ProblemError,
    SandboxError,
    TooLargeForCPUError,
    TritonAgentError,
)
from tools.limits import Limits
from tools.problem import Problem, read_problem
from tools.results import STATUSES, Verdict
from tools.sandbox import Sandbox
from tools.verify import Verifier, VerifyOptions, verify

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
