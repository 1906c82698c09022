"""The package's version and the name the user typed to run it (for `--version` and usage lines)."""

from __future__ import annotations

import importlib.metadata
import os
import sys

DIST = "triton-agent"


def package_version() -> str:
    """The installed distribution's version (`0+unknown` in a checkout that was not installed)."""
    try:
        return importlib.metadata.version(DIST)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def version_line() -> str:
    """What `--version` prints."""
    return f"triton-agent {package_version()}"


def prog_name(argv0: str | None = None) -> str:
    """`triton-agent` when run through the console script, `python -m agent` when run as a
    module (argv[0] is then the package's `__main__.py`), else the script's base name."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    base = os.path.basename(argv0 or "")
    if base in ("__main__.py", "-m", "-c", "") or base.endswith("pytest"):
        return "python -m agent"
    return base
