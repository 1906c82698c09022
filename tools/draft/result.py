"""What the compiler drafter returns, and the error it raises for code it cannot map."""

from __future__ import annotations

import dataclasses
from typing import Any

from tools.core.errors import ShimError

LIBRARY_CALLS_ALLOWED = frozenset({"mm", "addmm", "bmm", "convolution"})
"""Library calls the verifier's allow-library policy accepts (the candidate is then "mixed")."""


class DraftUnsupportedError(ShimError):
    """Inductor produced code this rewriter does not understand (a grid type, a runtime call...)."""


@dataclasses.dataclass
class DraftResult:
    """A drafted candidate and how it was made."""

    source: str
    """The candidate file: `ModelNew` + `@triton.jit` kernels, needing only torch and triton."""
    mixed: bool
    """True when `forward` also calls a library op (only the allow-library policy accepts it)."""
    library_calls: list[str]
    """The library ops `forward` calls (`mm`, `convolution`, `aten.sort`...), in call order."""
    kernels: list[str]
    """Names of the `@triton.jit` kernels launched, in launch order."""
    notes: list[str]
    """What a reader should know: rewrites made for the interpreter, choices made without tuning."""
    dynamic: bool = False
    """True when sizes, strides and Python-number attributes are read at run time."""
    fixed_sizes: list[str] = dataclasses.field(default_factory=list)
    """What still depends on a size: input dimensions Inductor fixed, its guards on sizes."""
    precision: str | None = None
    """`tl.dot` input precision of the GEMMs (`tf32x3`), None when there is no GEMM template."""
    settings: str = "default"
    """The Inductor settings drafted with (`SETTINGS`)."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
