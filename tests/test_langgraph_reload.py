"""`langgraph dev` must not reload in the middle of a run (issue 38, item 3).

`langgraph dev` serves through `uvicorn.run(..., reload=True)` with no reload_dirs, includes or
excludes (langgraph_api.cli.run_server): uvicorn watches its working directory, the project
root, and restarts on any `*.py` that changes there (uvicorn's FileFilter). A served run used to
write `runs/<id>/best_kernel.py` and `attempts/NN/kernel.py` there. The test runs the served
graph with the server's working directory as cwd and asks uvicorn's own filter whether any file
the run wrote would have restarted it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.langgraph_app import ServeContext, make_graph, served_runs_dir
from tests.helpers import EX, ROOT, fenced, write_replies

GOOD = fenced((EX / "kernels/relu.py").read_text())


def _watched_by_langgraph_dev() -> tuple[list[Path], object]:
    """uvicorn's reload directories and file filter, configured as `langgraph dev` configures
    them (reload on, nothing included or excluded), in the current working directory."""
    pytest.importorskip("watchfiles")
    from uvicorn.config import Config
    from uvicorn.supervisors.watchfilesreload import FileFilter

    config = Config("langgraph_api.server:app", reload=True)
    return [Path(d) for d in config.reload_dirs], FileFilter(config)


def test_a_served_run_writes_nothing_the_dev_server_reloads_on(tmp_path, monkeypatch):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("TRITON_AGENT_RUNS", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))

    dirs, reloads_on = _watched_by_langgraph_dev()
    assert dirs == [project]
    ctx = ServeContext(
        replies=write_replies(tmp_path / "r.jsonl", [GOOD]),
        budget=1, compiler_seed=False, trials=1, aot_target=None, timeout_s=240.0,
    )  # fmt: skip
    out = make_graph().invoke({"problem": str(EX / "problems/relu.py")}, context=ctx)
    assert out["best"]["status"] == "ok"

    run = Path(served_runs_dir()) / out["run_id"]
    assert (run / "best_kernel.py").is_file()  # the run wrote its files ...
    triggers = [p for d in dirs for p in d.rglob("*") if p.is_file() and reloads_on(p)]
    assert not triggers, f"langgraph dev would reload on {triggers}"  # ... none where watched
    assert reloads_on(project / "runs" / "x" / "best_kernel.py")  # where they used to go


def test_served_runs_dir_honours_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_RUNS", str(tmp_path / "mine"))
    assert ServeContext().options()["runs_dir"] == str(tmp_path / "mine")
    assert ServeContext(runs_dir="x").options()["runs_dir"] == "x"
    monkeypatch.delenv("TRITON_AGENT_RUNS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert ServeContext().options()["runs_dir"] == str(tmp_path / "cache/triton-agent/served-runs")


def test_langgraph_api_state_is_ignored_by_git():
    """`langgraph dev` keeps its in-memory server's state in `.langgraph_api/`."""
    done = subprocess.run(
        ["git", "check-ignore", "-q", ".langgraph_api/store.pckl"], cwd=ROOT, check=False
    )
    assert done.returncode == 0
