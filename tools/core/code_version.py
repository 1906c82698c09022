"""Which version of this project's code made a verdict: a digest of its own source.

A bench that is resumed over several calls, or a table merged from several benches, may mix
verdicts made by different versions of the verifier and the drafter (issue 35's audit found a
merged headline table made by several past versions of the code). Every bench record carries
`code_version()`, so a report can say whether its verdicts come from one version of the code.

The digest covers what decides a verdict or a speed: the `agent`, `tools` and `prompts`
packages' files (sources and prompt templates), by path and content. It is a digest of
files, not a git commit: the GPU machines run a copy of the working tree without `.git`, and a
tree with uncommitted edits is another version.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "tools", "prompts")
SUFFIXES = (".py", ".txt", ".json", ".cu", ".cpp", ".c", ".h")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """16 hex digits over the packages' files (relative path and bytes, in path order); the
    same tree gives the same digest on any machine. Computed once a process."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix not in SUFFIXES or "__pycache__" in path.parts or not path.is_file():
                continue
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
            try:
                digest.update(path.read_bytes() + b"\0")
            except OSError:  # unreadable: named, not read; a bench's record is never lost to it
                digest.update(b"unreadable\0")
    return digest.hexdigest()[:16]
