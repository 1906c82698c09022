"""tools/core/pyast.py: every parse of the project runs one thread at a time (CPython 3.11's AST
constructor is not thread-safe: "AST constructor recursion depth mismatch", seen in
tests/test_bench.py on CI), and gives what ast.parse gives."""

from __future__ import annotations

import ast
import threading
import time

from tools.core import pyast


def test_parses_like_ast_parse():
    src = "def f(x):\n    return [x, {'k': (1, 2)}]\n"
    assert ast.dump(pyast.parse(src)) == ast.dump(ast.parse(src))
    assert isinstance(pyast.parse("1 + 2", mode="eval"), ast.Expression)


def test_threads_parse_one_at_a_time(monkeypatch):
    inside, most = 0, 0
    count = threading.Lock()
    real = ast.parse

    def slow_parse(*args, **kwargs):  # a parse long enough for the threads to overlap
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)
        with count:
            inside -= 1
        return real(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", slow_parse)
    threads = [threading.Thread(target=pyast.parse, args=("x = 1",)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1


def test_every_parse_of_the_project_goes_through_it():
    """No module of agent/ or tools/ calls ast.parse itself (tools/job/candidate_evidence.py
    excepted: the candidate's own single-threaded process, which imports as little of the project
    as it can)."""
    from tests.helpers import ROOT

    direct = [
        str(p.relative_to(ROOT))
        for d in ("agent", "tools")
        for p in (ROOT / d).rglob("*.py")
        if p.name not in ("pyast.py", "candidate_evidence.py")
        and "ast.parse(" in p.read_text().replace("pyast.parse(", "")
    ]
    assert direct == []
