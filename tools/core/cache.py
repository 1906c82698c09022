"""The per-machine cache (`TRITON_AGENT_CACHE`, default `~/.cache/triton-agent`): what a problem
costs once and every later run on this machine reuses (problem checks, compiler drafts,
baselines). Every entry is a JSON file written atomically; one that cannot be read is a miss,
one that cannot be written only costs time."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    return Path(os.environ.get("TRITON_AGENT_CACHE") or Path.home() / ".cache" / "triton-agent")


def read_json(path: Path) -> Any:
    """The file's JSON, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any, indent: int | None = None) -> None:
    """Write `data` to `path` atomically (a temporary file, then a rename); never raises."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=indent)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)  # no half-written file left behind
        except OSError:
            pass
