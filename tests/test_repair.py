"""`python -m agent repair`: every broken example kernel is repaired with a scripted reply, and the
LLM's first prompt carries the broken kernel's verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli import main
from tests.helpers import EX, ROOT, fenced, last_json, last_json_line, write_replies

BROKEN = sorted(EX.glob("broken/*.py"))
# the default run repairs one kernel of each status; the others are `slow` (docs/testing.md)
FIRST_OF_STATUS = set({k.stem.split("__")[1]: k for k in reversed(BROKEN)}.values())
# like tests.helpers.FAST_CLI. The timeout is a job's (compile included): 15 s failed 18 tests
# with the machine loaded (load average 14) once every verification gained a scale trial
FAST = ["--trials", "2", "--target", "none", "--timeout", "60"]
# The endless kernel's repair: any limit kills it, and at 60 s it spun a core for a minute of
# the suite (64 s of the file's 167, session 19). Its fix is a ReLU, verified in a few seconds.
TIMEOUT_CASE = [*FAST[:-1], "20"]


def replies_for(problem: str, tmp_path: Path) -> str:
    fixed = (EX / "kernels" / f"{problem}.py").read_text()
    return write_replies(tmp_path / "replies.jsonl", [fenced(fixed, "Here is the fixed kernel:")])


def test_every_broken_example_has_a_problem_and_a_fix():
    assert len(BROKEN) >= 10
    for kernel in BROKEN:
        problem = kernel.name.split("__")[0]
        assert (EX / "problems" / f"{problem}.py").exists(), kernel.name
        assert (EX / "kernels" / f"{problem}.py").exists(), kernel.name


@pytest.mark.parametrize("kernel", [k if k in FIRST_OF_STATUS else pytest.param(k, marks=pytest.mark.slow) for k in BROKEN], ids=[k.stem for k in BROKEN])  # fmt: skip
def test_repair_each_broken_kernel(kernel, tmp_path, capsys):
    problem, expected = kernel.stem.split("__")
    rc = main(
        [
            "repair",
            str(EX / "problems" / f"{problem}.py"),
            str(kernel),
            "--budget",
            "2",
            "--replies",
            replies_for(problem, tmp_path),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *(TIMEOUT_CASE if expected == "timeout" else FAST),
        ]
    )
    res = last_json(capsys)
    assert rc == 0, res
    assert res["command"] == "repair" and res["status"] == "ok" and res["correct"]
    given, fixed = res["attempts"]
    assert given["source"] == "given" and given["index"] == 0
    assert given["status"] == expected  # the file name says which failure it produces
    assert fixed["status"] == "ok"
    assert res["budget"] == {"given": 2, "left": 1}  # the given kernel is free

    attempts = Path(res["run_dir"]) / "attempts"
    first = json.loads((attempts / "00" / "attempt.json").read_text())
    second_prompt = (attempts / "01" / "prompt.txt").read_text()
    evidence = first["feedback"].strip()
    assert evidence and evidence[:300] in second_prompt  # the LLM read the broken kernel's verdict
    assert f"Verdict: {expected}." in second_prompt


def test_repair_runs_unattended(tmp_path):
    """stdin closed, a time limit, a JSON result, no temporary files left behind."""
    kernel = EX / "broken" / "relu__syntax_error.py"
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "repair",
            str(EX / "problems" / "relu.py"),
            str(kernel),
            "--budget",
            "2",
            "--replies",
            replies_for("relu", tmp_path),
            "--runs-dir",
            str(runs),
            "--time-limit",
            "120",
            "--json",
            *FAST,
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    res = last_json_line(proc.stdout)
    assert [a["status"] for a in res["attempts"]] == ["syntax_error", "ok"]
    run_dir = Path(res["run_dir"])
    assert (run_dir / "best_kernel.py").exists() and (run_dir / "report.json").exists()
    assert json.loads((run_dir / "report.json").read_text())["status"] == "ok"
    assert not list(runs.rglob("*.tmp"))


def test_repair_time_limit_stops_the_loop(tmp_path, capsys):
    """A spent time limit ends the run after the given kernel, with a JSON result and exit 1."""
    rc = main(
        [
            "repair",
            str(EX / "problems" / "relu.py"),
            str(EX / "broken" / "relu__mismatch.py"),
            "--budget",
            "5",
            "--replies",
            replies_for("relu", tmp_path),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--time-limit",
            "0.001",
            "--json",
            *FAST,
        ]
    )
    res = last_json(capsys)
    assert rc == 1 and res["status"] == "failed"
    assert res["stop_reason"] == "time limit reached"
    assert [a["source"] for a in res["attempts"]] == ["given"]
