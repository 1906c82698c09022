"""Live progress bars on a terminal, plain lines in logs (agent.progress)."""

from __future__ import annotations

import io
import shutil
import sys

import pexpect
from rich.console import Console

from agent.progress import Bar, live_progress
from tests.helpers import EX, ROOT, fenced, write_replies


def test_a_log_gets_the_printer_alone():
    printer = lambda e: None
    console = Console(file=io.StringIO(), force_terminal=False)
    with live_progress(printer, "bench", console=console) as on_event:
        assert on_event is printer


def test_bench_bar_counts_candidates_and_prints_every_event(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")  # a terminal, also where the suite runs under TERM=dumb
    seen = []
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with live_progress(seen.append, "bench", console=console) as bar:
        assert isinstance(bar, Bar)
        bar({"event": "start", "device": "cpu", "slots": 2})
        bar({"event": "problem", "problem": "a", "done": 1, "todo": 2})
        bar({"event": "problem", "problem": "b", "done": 0, "todo": 3})
        bar({"event": "sample", "record": {"problem": "a"}})
        task = bar.progress.tasks[0]
        assert (task.completed, task.total) == (2, 6)
    assert len(seen) == 4


def test_optimize_bar_counts_new_drafts_only(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    with live_progress(lambda e: None, "optimize", console=console, total=4) as bar:
        for source in ("compiler", "llm:m", "llm:m"):
            bar({"event": "attempt", "attempt": {"source": source}})
        assert bar.progress.tasks[0].completed == 2


def test_bench_on_a_terminal_draws_the_bar(tmp_path):
    """The real command in a pseudo-terminal: the bar (label, count) and the event lines."""
    probs = tmp_path / "probs"
    probs.mkdir()
    shutil.copy(EX / "problems/relu.py", probs / "relu.py")
    replies = write_replies(tmp_path / "r.jsonl", [fenced((EX / "kernels/relu.py").read_text())])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent", "bench", str(probs), "--replies", replies, "--samples", "1",
         "--out", str(tmp_path / "out"), "--trials", "2", "--target", "none"],
        cwd=str(ROOT), env={"PATH": "/usr/bin:/bin", "TERM": "xterm", "PYTHONPATH": str(ROOT),
                            "COLUMNS": "120"},
        encoding="utf-8", timeout=240, dimensions=(40, 120),
    )  # fmt: skip
    child.expect("candidates")  # the live bar
    child.expect("relu/00")  # an event line printed above it
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
