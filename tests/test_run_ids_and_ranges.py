"""Runs lose nothing and refuse nonsense: a run directory is never reused silently nor outside the
runs root, a resume names its own problem, and option values out of range are exit 2 before any
work is done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli import main
from agent.config import AgentConfig
from tests.helpers import EX, FAST_CLI

RELU = str(EX / "problems" / "relu.py")
SOFTMAX = str(EX / "problems" / "softmax.py")


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def fake_run(runs: Path, run_id: str, problem: str = RELU) -> Path:
    """A run directory as `optimize` leaves it (its config is all that resume reads first)."""
    rd = runs / run_id
    (rd / "attempts" / "00").mkdir(parents=True)
    (rd / "attempts" / "00" / "verdict.json").write_text('{"status": "ok"}')
    config = {**AgentConfig(aot_target=None).to_dict(), "_problem_path": problem}
    (rd / "config.json").write_text(json.dumps({**config, "_mode": "optimize"}))
    return rd


# -- run ids and run directories --------------------------------------------------------------


def test_an_existing_run_id_is_refused_naming_resume(tmp_path, capsys):
    runs = tmp_path / "runs"
    rd = fake_run(runs, "r1")
    before = {p: p.read_bytes() for p in rd.rglob("*") if p.is_file()}
    rc = main(["optimize", RELU, "--runs-dir", str(runs), "--run-id", "r1", *FAST_CLI])
    err = capsys.readouterr().err
    assert rc == 2
    assert "already exists" in err and "--resume r1" in err
    assert {p: p.read_bytes() for p in rd.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    "run_id", ["../../tmp/evil", "../evil", "a/b", "..", ".", "", "x" * 101, "a b", "évil"]
)
def test_a_run_id_that_is_not_one_directory_name_is_refused(run_id, tmp_path, capsys):
    runs = tmp_path / "a" / "runs"
    rc = main(["optimize", RELU, "--runs-dir", str(runs), "--run-id", run_id, *FAST_CLI])
    err = capsys.readouterr().err
    assert rc == 2 and "is not a run id" in err
    assert files_under(tmp_path) == []


def test_a_resume_id_outside_the_runs_root_is_refused(tmp_path, capsys):
    fake_run(tmp_path, "outside")
    runs = tmp_path / "runs"
    runs.mkdir()
    rc = main(["optimize", "--resume", "../outside", "--runs-dir", str(runs)])
    assert rc == 2 and "is not a run id" in capsys.readouterr().err


def test_a_valid_run_id_is_accepted():
    assert AgentConfig(run_id="2026-11-30_relu.v2", aot_target=None).run_id == "2026-11-30_relu.v2"


def test_resuming_with_another_problem_is_refused(tmp_path, capsys):
    runs = tmp_path / "runs"
    rd = fake_run(runs, "r1", problem=RELU)
    before = files_under(rd)
    rc = main(["optimize", SOFTMAX, "--resume", "r1", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert rc == 2 and "softmax.py" in err and "relu.py" in err
    assert files_under(rd) == before  # no checkpoint opened, nothing written


def test_resuming_with_another_run_id_is_refused(tmp_path, capsys):
    runs = tmp_path / "runs"
    fake_run(runs, "r1")
    rc = main(["optimize", "--resume", "r1", "--run-id", "r2", "--runs-dir", str(runs)])
    assert rc == 2 and "--run-id r2 differs from --resume r1" in capsys.readouterr().err


# -- option ranges ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--atol=-1e-3"], "--atol must be a finite number >= 0, got"),
        (["--atol", "nan"], "--atol must be a finite number >= 0, got"),
        (["--rtol", "inf"], "--rtol must be a finite number >= 0, got"),
        (["--rtol=-0.5"], "--rtol must be a finite number >= 0, got"),
        (["--target-speedup", "0"], "--target-speedup must be a finite number > 0"),
        (["--target-speedup=-2"], "--target-speedup must be a finite number > 0"),
        (["--target-speedup", "nan"], "--target-speedup must be a finite number > 0"),
        (["--target-speedup", "inf"], "--target-speedup must be a finite number > 0"),
        (["--trials", "0"], "--trials must be a whole number >= 1"),
        (["--target", "banana"], "--target 'banana' is not a CUDA architecture"),
        (["--target", "sm_999"], "--target 'sm_999' is not a CUDA architecture"),
        (["--target", "sm_91"], "--target 'sm_91' is not a CUDA architecture"),
    ],
)
def test_values_out_of_range_are_bad_input(flags, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # FAST_CLI first: the flag under test, given later, wins
    rc = main(["optimize", RELU, *FAST_CLI, *flags])
    err = capsys.readouterr().err
    assert rc == 2 and message in err
    assert files_under(tmp_path) == []


@pytest.mark.parametrize(
    "target", ["sm_70", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_120", "h100"]
)
def test_known_targets_are_accepted(target):
    assert AgentConfig(aot_target=target).aot_target == target
