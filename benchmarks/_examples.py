"""The example kernels (examples/kernels, examples/broken) and the problem each one is for.

A kernel file is `<problem>[_inductor_style][__<status>].py`: `relu.py`, `relu_inductor_style.py`
and `relu__timeout.py` are all candidates for `examples/problems/relu.py`; a broken one's
`__<status>` suffix is the verdict it must get. Shared by the benchmark scripts (run as
`python benchmarks/<script>.py`, so this directory is on `sys.path`).
"""

from __future__ import annotations

from pathlib import Path

EX = Path(__file__).resolve().parent.parent / "examples"


def example_kernels(dirs: tuple[str, ...] = ("kernels", "broken")) -> list[Path]:
    """The `.py` files of each of `dirs` (under examples/), each directory sorted, in that order."""
    return [f for d in dirs for f in sorted((EX / d).glob("*.py"))]


def problem_for(kernel_path: str | Path) -> Path:
    """examples/problems/<problem>.py for an example kernel (see the module docstring)."""
    name = Path(kernel_path).stem.split("__")[0].replace("_inductor_style", "")
    return EX / "problems" / f"{name}.py"


def expected_status(kernel_path: str | Path) -> str:
    """The verdict an example kernel must get: its `__<status>` suffix, else `ok`."""
    stem = Path(kernel_path).stem
    return stem.split("__")[1] if "__" in stem else "ok"
