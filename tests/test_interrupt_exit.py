"""Ctrl-C at the edges of a run (issue 38, item 6): after the run has finished, the process
exits with the run's own status; before the run directory exists, the message says there is
nothing to resume."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import agent.runner
from agent.cli import main
from tests.helpers import EX, ROOT, fenced, sigint_as_default, write_replies

RELU = str(EX / "problems" / "relu.py")
GOOD = (EX / "kernels" / "relu.py").read_text()

# The console script (`sys.exit(main())`), plus an object whose __del__ sends the process a
# SIGINT as the interpreter tears its modules down: after Python has restored SIGINT's default
# action, where a Ctrl-C in the last seconds of a finished run landed.
LATE_CTRL_C = textwrap.dedent(
    """
    import os, signal, sys, time
    from agent.cli import main

    class CtrlCAtTeardown:
        def __del__(self, kill=os.kill, pid=os.getpid(), sleep=time.sleep, sig=signal.SIGINT):
            kill(pid, sig)
            sleep(0.5)  # the signal is delivered by now: a default action would have killed us

    ctrl_c_at_teardown = CtrlCAtTeardown()
    sys.exit(main())
    """
)


def test_ctrl_c_while_a_finished_run_exits_keeps_its_status(tmp_path: Path):
    replies = write_replies(tmp_path / "r.jsonl", [fenced(GOOD)])
    argv = [
        "optimize", RELU, "--replies", replies, "--budget", "1", "--no-compiler-seed",
        "--runs-dir", str(tmp_path / "runs"), "--trials", "1", "--target", "none",
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", LATE_CTRL_C, *argv],
        cwd=ROOT, capture_output=True, text=True, preexec_fn=sigint_as_default,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "dumb"},
    )  # fmt: skip
    assert "best kernel:" in done.stderr, done.stderr[-3000:]  # the run succeeded ...
    assert done.returncode == 0, done.stderr[-3000:]  # ... and exits saying so, not 130


def test_main_called_by_a_host_leaves_its_sigint_alone(tmp_path: Path, capsys):
    import signal

    before = signal.getsignal(signal.SIGINT)
    assert main(["verify", RELU]) == 2  # any command (here: bad usage)
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_before_the_run_directory_exists_says_nothing_to_resume(
    tmp_path: Path, monkeypatch, capsys
):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as if Ctrl-C came while the verifier and backend were built

    monkeypatch.setattr(agent.runner, "make_context", interrupted)
    runs = tmp_path / "runs"
    rc = main(["optimize", RELU, "--backend", "compiler", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert rc == 130
    assert "nothing to --resume" in err and "checkpointed" not in err, err
    assert not runs.exists() or not any(runs.iterdir())
