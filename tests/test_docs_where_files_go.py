"""docs/integrations.md and the README say where the KernelBench export's verdicts and served
`langgraph dev` runs go, as the code decides it (issue 38's loose ends of items 1 and 3)."""

from __future__ import annotations

import re

import pytest

from agent import kernelbench_io
from tests.helpers import ROOT

DOC = (ROOT / "docs" / "integrations.md").read_text()
README = (ROOT / "README.md").read_text()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_export_names_the_file_it_writes():
    section = DOC.split("## KernelBench's own scripts", 1)[1].split("\n## ", 1)[0]
    assert f"`RUN_DIR/{kernelbench_io.RESULTS_NAME}`" in section
    # eval_results.json only as KernelBench's file, never as one the export writes
    assert not re.search(r"`RUN_DIR/eval_results\.json`", section)
    assert kernelbench_io.TIMEOUT_METADATA["error"] in section


def test_served_runs_directory_is_the_documented_one(tmp_path, monkeypatch):
    pytest.importorskip("langgraph")
    from agent.langgraph_app import served_runs_dir

    monkeypatch.delenv("TRITON_AGENT_RUNS", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    default = served_runs_dir().replace(str(tmp_path), "~")
    monkeypatch.setenv("TRITON_AGENT_RUNS", str(tmp_path / "mine"))
    assert served_runs_dir() == str(tmp_path / "mine")

    serve = flat(DOC.split("## Serve the loop with LangGraph", 1)[1].split("\n## ", 1)[0])
    assert f"`{default}`" in serve and "`$TRITON_AGENT_RUNS`" in serve
    line = flat(README.split("langgraph dev", 1)[1][:400])
    assert f"`{default}`" in line and "`$TRITON_AGENT_RUNS`" in line
