"""Ctrl-C (issue 17): an evaluation stopped by KeyboardInterrupt checkpoints the attempts that
had finished, and `--resume` evaluates only the candidates left, under their own numbers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import agent.nodes
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.helpers import EX, ROOT, fenced, last_json_line, sigint_as_default, write_replies
from tools.orchestrate.evaluate import no_code_verdict

RELU = str(EX / "problems" / "relu.py")
GOOD = (EX / "kernels" / "relu.py").read_text()


def test_ctrl_c_keeps_finished_attempts_and_resume_does_the_rest(tmp_path, monkeypatch):
    calls: list[int] = []
    interrupt_at = {1}

    def fake_evaluate(ctx, problem, cand, *, index, round_):
        calls.append(index)
        if index in interrupt_at:
            raise KeyboardInterrupt  # as if Ctrl-C arrived while this candidate ran
        verdict = no_code_verdict("scripted")
        return {
            "index": index, "round": round_, "source": cand["source"], "code": cand["code"],
            "status": verdict.status, "correct": False, "speedup": None, "speedups": {},
            "verdict": verdict.to_dict(), "profile": None, "feedback": "", "summary": "scripted",
        }  # fmt: skip

    monkeypatch.setattr(agent.nodes, "evaluate_candidate", fake_evaluate)
    cfg = AgentConfig(
        budget=2, samples_per_round=2, compiler_seed=False, trials=1, aot_target=None,
        runs_dir=str(tmp_path), run_id="r1", backend="replay",
    )  # fmt: skip
    replies = [fenced(GOOD), fenced(GOOD)]
    with pytest.raises(KeyboardInterrupt):
        run(RELU, cfg, backend=ReplayBackend(list(replies)))
    assert sorted(calls) == [0, 1]
    assert Path(tmp_path, "r1", "attempts", "00").is_dir()  # the finished one is on disk

    calls.clear()
    interrupt_at.clear()
    res = run(None, cfg, resume="r1", backend=ReplayBackend(list(replies)))
    assert calls == [1]  # attempt 0 was checkpointed, not redone
    assert [a["index"] for a in res["attempts"]] == [0, 1]
    assert res["budget"]["left"] == 0


# ------------------------------------------------------------------------------------------
# A real SIGINT to a real `python -m agent optimize` (issue 17: "40 s of silence before
# 'interrupted'"; an attempt printed was not checkpointed; `--resume` redid it).

BAD = (EX / "broken" / "relu__mismatch.py").read_text()
JOB_TIMEOUT_S = "3600"
"""The runs' `--timeout`: a job ends by then on its own. A run that exits on SIGINT with its
job still waiting (a gated candidate, an endless loop) was stopped by the SIGINT, not by a
timeout. How fast it stops is a timing claim, measured by benchmarks/sigint_latency.py, not
asserted here (a 15 s limit failed on a loaded 2-core machine: 18.6 s, issue 38)."""
HANG_GUARD_S = 900
"""Only so that a run that never stops fails the test instead of hanging it."""


def _optimize(tmp_path: Path, *args: str, jobs: Path | None = None) -> subprocess.Popen:
    """Start `optimize`; with `jobs`, its sandbox jobs make their directories there."""
    cmd = [sys.executable, "-m", "agent", "optimize", *args, "--runs-dir", str(tmp_path / "runs"),
           "--trials", "1", "--target", "none", "--timeout", JOB_TIMEOUT_S]  # fmt: skip
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200"}
    if jobs is not None:
        env["TMPDIR"] = str(jobs)
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_default,
    )  # fmt: skip


def _gated(code: str, go: Path) -> str:
    """`code` that, as its module loads in the sandbox, waits until the file `go` exists: a
    candidate that cannot finish before the test lets it (the sandbox lets a job look at a
    file, not write one)."""
    return (
        f"import os as _os\nimport time as _time\n\nwhile not _os.path.exists({str(go)!r}):\n"
        f"    _time.sleep(0.05)\n\n{code}"
    )


def _wait_for_job(proc: subprocess.Popen, jobs: Path, kernel: str) -> None:
    """Until a sandbox job under `jobs` holds the candidate file `kernel` (it is being verified)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not list(jobs.glob(f"ta-job-*/{kernel}")):
        assert proc.poll() is None, "the run ended first:\n" + (proc.communicate()[1] or "")
        assert time.monotonic() < deadline, f"no job for {kernel} within {HANG_GUARD_S} s"
        time.sleep(0.1)


def _read_until(proc: subprocess.Popen, marker: str, *, after: str | None = None) -> list[str]:
    """The lines `proc` prints to stderr up to one with `marker` (after one with `after`)."""
    seen: list[str] = []
    armed = after is None
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        armed = armed or (after is not None and after in line)
        if armed and marker in line:
            return seen
    raise AssertionError("the run ended before the phase to interrupt:\n" + "".join(seen))


def _interrupt(proc: subprocess.Popen, seen: Sequence[str] = ()) -> str:
    """SIGINT `proc`; asserts it then exits with 130, saying how to go on; returns everything it
    printed (`seen`: what was read already)."""
    os.kill(proc.pid, signal.SIGINT)
    try:
        _, rest = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        proc.kill()
    out = "".join(seen) + rest
    assert proc.returncode == 130, out
    assert "interrupted: every finished attempt is checkpointed; continue with --resume r" in out
    return out


def _resume(tmp_path: Path) -> tuple[int, str, dict]:
    out = subprocess.run(
        [sys.executable, "-m", "agent", "optimize", "--resume", "r", "--json",
         "--runs-dir", str(tmp_path / "runs")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return out.returncode, out.stderr, last_json_line(out.stdout)


def _checkpointed(tmp_path: Path) -> list[int]:
    return sorted(int(p.name) for p in (tmp_path / "runs" / "r" / "attempts").iterdir())


@pytest.fixture
def jobs() -> Iterator[Path]:
    """A directory for sandbox jobs with a short path (the forkserver's socket lives there, and
    an AF_UNIX path has at most 107 bytes: pytest's tmp_path is too long)."""
    path = Path(tempfile.mkdtemp(prefix="ta-jobs-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow  # docs/testing.md: the in-process Ctrl-C test above covers it
def test_sigint_while_evaluating_keeps_what_finished_and_resume_does_the_rest(tmp_path, jobs):
    go = tmp_path / "go"
    replies = write_replies(tmp_path / "replies.jsonl", [fenced(BAD), fenced(_gated(GOOD, go))])
    proc = _optimize(tmp_path, RELU, "--replies", replies, "--budget", "2",
                     "--no-compiler-seed", "--run-id", "r", jobs=jobs)  # fmt: skip
    # round 2's candidate is being verified, and waits for `go`: attempt 0 alone has finished
    _wait_for_job(proc, jobs, "attempt_01.py")
    _interrupt(proc)
    assert _checkpointed(tmp_path) == [0]
    go.touch()
    rc, err, result = _resume(tmp_path)
    assert rc == 0, err
    assert "resuming: 1 attempts already evaluated" in err
    assert "attempt  0" not in err and "attempt  1" in err  # attempt 0 was not redone
    assert [a["index"] for a in result["attempts"]] == [0, 1]
    assert result["attempts"][1]["status"] == "ok"


def test_sigint_while_the_llm_drafts_stops_at_once(tmp_path):
    from tests.fakes.openai_server import FakeOpenAIServer

    # The first request is answered (an entry the server does not know means "answer"); the
    # second, round 2's, hangs for two minutes.
    with FakeOpenAIServer(
        [fenced(BAD), fenced(GOOD)], failures=["answer", "slow"], slow_s=120
    ) as server:
        proc = _optimize(tmp_path, RELU, "--base-url", server.url, "--budget", "2",
                         "--no-compiler-seed", "--run-id", "r")  # fmt: skip
        _interrupt(proc, _read_until(proc, "round 2: drafting"))
    assert _checkpointed(tmp_path) == [0]


def test_sigint_while_verifying_an_endless_kernel_stops_at_once(tmp_path):
    """`verify` waited for the killed run's jobs to end: 112 s for an infinite loop under
    --timeout 120."""
    endless = EX / "broken" / "relu__timeout.py"
    cmd = [sys.executable, "-m", "agent", "verify", RELU, str(endless), "--timeout", JOB_TIMEOUT_S,
           "--target", "none", "--trials", "1"]  # fmt: skip
    env = {**os.environ, "TERM": "dumb", "TMPDIR": str(tmp_path)}  # where jobs get their dirs
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_default
    )
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        # the candidate's job writes the kernel into its directory before it runs it
        while not list(tmp_path.glob(f"ta-job-*/{endless.name}")):
            assert proc.poll() is None and time.monotonic() < deadline, "no candidate job"
            time.sleep(0.2)
        time.sleep(2.0)  # in its endless loop by now
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=HANG_GUARD_S)  # the job itself runs for an hour
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "timeout" not in err.lower(), err  # stopped by the SIGINT, not by the job's limit


def test_a_long_evaluation_says_what_is_running_and_for_how_long(tmp_path, monkeypatch):
    import time as _time

    def slow_evaluate(ctx, problem, cand, *, index, round_):
        _time.sleep(0.5)
        verdict = no_code_verdict("scripted")
        return {
            "index": index, "round": round_, "source": cand["source"], "code": cand["code"],
            "status": verdict.status, "correct": False, "speedup": None, "speedups": {},
            "verdict": verdict.to_dict(), "profile": None, "feedback": "", "summary": "scripted",
        }  # fmt: skip

    monkeypatch.setattr(agent.nodes, "evaluate_candidate", slow_evaluate)
    monkeypatch.setattr(agent.nodes, "HEARTBEAT_S", 0.1)
    cfg = AgentConfig(
        budget=1, compiler_seed=False, trials=1, aot_target=None, runs_dir=str(tmp_path),
        run_id="r", backend="replay",
    )  # fmt: skip
    events: list[dict] = []
    run(RELU, cfg, backend=ReplayBackend([fenced(GOOD)]), on_event=events.append)
    beats = [e for e in events if e["event"] == "evaluating"]
    assert beats and beats[0]["attempts"] == [0]
    assert beats[0]["message"].startswith("still evaluating attempt 0 (")


def test_a_second_ctrl_c_at_once_does_not_cut_the_checkpoint_short(monkeypatch):
    import agent.interrupt as interrupt

    killed: list[int] = []
    monkeypatch.setattr(interrupt, "kill_jobs", lambda: killed.append(1))
    interrupt.STOPPING.clear()
    with pytest.raises(KeyboardInterrupt):
        interrupt._on_sigint(2, None)
    assert interrupt.STOPPING.is_set() and killed == [1]
    interrupt._on_sigint(2, None)  # within the grace: the first is still being handled
    monkeypatch.setattr(interrupt, "REPEAT_GRACE_S", 0.0)
    with pytest.raises(KeyboardInterrupt):
        interrupt._on_sigint(2, None)
    interrupt.STOPPING.clear()
