"""`ast.parse` behind one process-wide lock.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so two
threads parsing at once can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905, fixed in later releases). `agent bench` evaluates candidates in a thread
pool, and each evaluation parses the candidate (tools.core.problem.check_candidate_source): CI saw the
error once in tests/test_bench.py on Python 3.11.7. Parsing is fast next to everything around
it, so every parse of this project goes through here, one at a time.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: Any, filename: str = "<unknown>", mode: str = "exec", **kwargs: Any) -> Any:
    """`ast.parse(source, filename, mode, **kwargs)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)
