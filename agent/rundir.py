"""The run directory: `runs/<run-id>/` with every attempt, the best kernel and the reports.

Every file is written atomically (temporary file + rename), so a killed run leaves no
half-written files, and attempts are written as soon as they are evaluated.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.core.errors import BadInputError
from tools.core.results import strict_json


def new_run_id(problem_path: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(problem_path).stem)[:40] or "problem"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{secrets.token_hex(2)}"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class RunDir:
    def __init__(self, root: str | os.PathLike[str], run_id: str):
        self.run_id = run_id
        self.path = Path(root) / run_id

    def mkdir(self) -> None:
        """Create the directory and its `attempts/` (nothing is created before this)."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "attempts").mkdir(exist_ok=True)

    @classmethod
    def existing(cls, root: str | os.PathLike[str], run_id: str) -> RunDir:
        rd = cls(root, run_id)
        if not (rd.path / "config.json").exists():
            raise BadInputError(f"no run {run_id!r} under {root}/ (nothing to resume)")
        return rd

    @property
    def checkpoint_db(self) -> Path:
        return self.path / "checkpoint.sqlite"

    def write_json(self, name: str, data: Any) -> Path:
        p = self.path / name
        write_atomic(p, strict_json(data, indent=2) + "\n")
        return p

    def read_json(self, name: str) -> Any:
        path = self.path / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:  # missing, unreadable, not UTF-8, corrupt JSON
            raise BadInputError(f"{path}: unreadable ({e})") from e

    def write_text(self, name: str, text: str) -> Path:
        p = self.path / name
        write_atomic(p, text)
        return p

    def write_attempt(self, attempt: dict[str, Any], prompt: Any, response: str) -> Path:
        d = self.path / "attempts" / f"{attempt['index']:02d}"
        if isinstance(prompt, list):  # chat messages
            prompt_text = "\n\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in prompt)
        else:
            prompt_text = prompt or ""
        write_atomic(d / "prompt.txt", prompt_text)
        write_atomic(d / "response.txt", response or "")
        if attempt.get("code"):
            write_atomic(d / "kernel.py", attempt["code"])
        write_atomic(d / "verdict.json", strict_json(attempt["verdict"], indent=2) + "\n")
        meta = {k: v for k, v in attempt.items() if k not in ("code", "verdict")}
        write_atomic(d / "attempt.json", strict_json(meta, indent=2) + "\n")
        return d
