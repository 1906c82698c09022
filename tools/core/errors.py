"""One exception hierarchy for the whole product.

Domain errors are raised as these classes and turned into a message and an exit code only at the
CLI boundary (`agent.cli`). A candidate kernel that fails is *not* an exception: it is a
`Verdict` with a status. Exceptions are for bad input and broken infrastructure.
"""

from __future__ import annotations


class TritonAgentError(Exception):
    """Base class. `exit_code` is what the CLI exits with when this reaches it."""

    exit_code = 2


class BadInputError(TritonAgentError):
    """A problem file, kernel file or option the user gave us is unusable."""

    exit_code = 2


class ProblemError(BadInputError):
    """The problem file does not follow the KernelBench contract (or cannot run)."""


class TooLargeForCPUError(ProblemError):
    """The problem's sizes are too large for the Triton interpreter on the CPU."""


class ResourceError(TritonAgentError):
    """The problem itself does not fit in the memory a job may use (its reference alone)."""

    exit_code = 1


class SandboxError(TritonAgentError):
    """The isolation machinery itself failed (not the candidate)."""

    exit_code = 1


class BackendError(TritonAgentError):
    """No LLM backend could be reached or it kept returning unusable replies."""

    exit_code = 1


class BackendConfigError(BackendError, BadInputError):
    """The backend options themselves are unusable (an unknown kind, replay without replies, no
    backend configured where one is needed): bad input, exit 2."""

    exit_code = 2


class ShimError(TritonAgentError):
    """A PyTorch-internals shim (Inductor drafter) does not support this torch version."""

    exit_code = 1


def is_out_of_memory_text(text: str) -> bool:
    """Whether an error message says memory ran out (CUDA's allocator, torch's CPU allocator
    under an address-space limit, or the exception's class name): the one test for `resource`."""
    return "out of memory" in text or "can't allocate memory" in text or "OutOfMemoryError" in text
