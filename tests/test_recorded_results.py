"""Issue 37: recorded results are data (JSON, CSV, Markdown, archives), not trees of Python
files: a recorded kernel or problem copy goes into a JSON map or an archive
(`tests.helpers.recorded_bench` unpacks a recorded bench for the tests that read one)."""

from __future__ import annotations

import subprocess

from tests.helpers import ROOT


def test_no_python_files_under_benchmarks_results():
    tracked = subprocess.run(
        ["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    if not tracked:  # not a git checkout: look at the tree
        tracked = [str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks/results").rglob("*")]
    assert [p for p in tracked if p.endswith(".py")] == []
