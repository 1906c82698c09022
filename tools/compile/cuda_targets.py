"""CUDA targets: the default one (`DEFAULT_TARGET`, what a CPU machine compiles candidates for
ahead of time), the names a target may be given by, and each compute capability's shared-memory
limit. No Triton import: the options and the CLI read it."""

from __future__ import annotations

import re

DEFAULT_TARGET = "sm_90"
"""The CUDA target kernels are compiled for ahead of time on a CPU machine (H100/H200)."""


# Largest shared memory one block may use (opt-in limit, bytes), by compute capability. A kernel
# that needs more compiles but fails at launch with OutOfResources.
SHARED_MEMORY_LIMITS = {
    70: 98304,
    75: 65536,
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    103: 232448,
    120: 101376,
}


_TARGET_ALIASES = {
    "v100": 70,
    "t4": 75,
    "a100": 80,
    "a10": 86,
    "a10g": 86,
    "l4": 89,
    "l40s": 89,
    "rtx4090": 89,
    "h100": 90,
    "h200": 90,
    "gh200": 90,
    "b200": 100,
    "gb200": 100,
}


def parse_target(target: str | int) -> tuple[str, int]:
    """`"sm_90"`, `"sm_90a"`, `"90"`, `90`, `"h100"` -> `("sm_90", 90)`."""
    if isinstance(target, int):
        return f"sm_{target}", target
    text = str(target).strip().lower()
    if text in _TARGET_ALIASES:
        cap = _TARGET_ALIASES[text]
        return f"sm_{cap}", cap
    match = re.fullmatch(r"(?:sm_?|cuda:|compute_)?(\d{2,3})a?", text)
    if not match:
        raise ValueError(
            f"unknown CUDA target {target!r}; expected e.g. 'sm_90', 'sm_80', 'sm_100'"
        )
    cap = int(match.group(1))
    return f"sm_{cap}", cap
