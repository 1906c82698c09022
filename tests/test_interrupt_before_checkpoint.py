"""Ctrl-C after the run directory is made but before the run's first checkpoint (issue 38's
loose end of item 6): `--resume` answered "the run had already finished: nothing to do" for a
run that never started (a checkpoint database without a checkpoint reads as a finished run).
Now the interrupted run leaves no directory (so the CLI's "nothing to --resume" is true), and a
directory left without a checkpoint (a SIGKILL in that window) is refused by `--resume` as such.

The Ctrl-C is a KeyboardInterrupt raised where the graph is built: the step between creating
the directory and the first checkpoint. No job runs."""

from __future__ import annotations

import pytest

import agent.runner
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.helpers import EX, fenced
from tools.core.errors import BadInputError

RELU = str(EX / "problems" / "relu.py")


@pytest.fixture
def cfg(tmp_path):
    return AgentConfig(
        budget=1,
        compiler_seed=False,
        trials=1,
        aot_target=None,
        runs_dir=str(tmp_path / "runs"),
        run_id="cut-short",
    )


def backend():
    return ReplayBackend([fenced((EX / "kernels" / "relu.py").read_text())])


def test_ctrl_c_before_the_first_checkpoint_leaves_nothing_to_resume(cfg, tmp_path, monkeypatch):
    def interrupted_here(**_):
        raise KeyboardInterrupt

    monkeypatch.setattr(agent.runner, "build_graph", interrupted_here)
    with pytest.raises(KeyboardInterrupt):
        run(RELU, cfg, backend=backend())
    assert not (tmp_path / "runs" / "cut-short").exists()

    monkeypatch.undo()
    with pytest.raises(BadInputError):  # no such run: not "already finished"
        run(None, cfg, resume="cut-short", backend=backend())


def test_resume_of_a_run_without_a_checkpoint_says_it_never_started(cfg, tmp_path):
    """The directory as a SIGKILL in that window leaves it: config and an empty checkpoint
    database. The run's own name still works for a new run once it is removed."""
    rundir = agent.runner.new_rundir(RELU, cfg)
    agent.runner.create_rundir(rundir, RELU, cfg, "optimize")
    import sqlite3

    sqlite3.connect(str(rundir.checkpoint_db)).close()
    with pytest.raises(BadInputError, match="stopped before its first checkpoint"):
        run(None, cfg, resume="cut-short", backend=backend())
