"""Loop-mode bench runs several problems' loops at once, on one shared set of sandbox slots
(`--loop-jobs`); Ctrl-C still stops it within seconds, keeps what finished, and the rerun
starts the interrupted problems over."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.cli import main
from tests.helpers import EX, FAST_CLI, ROOT, fenced, last_json, sigint_as_default, write_replies
from tools.orchestrate.verify import Verifier
from tools.sandboxing.sandbox import Sandbox

GOOD_RELU = fenced((EX / "kernels" / "relu.py").read_text())
SPINNING_RELU = fenced((EX / "broken" / "relu__timeout.py").read_text())


def relu_copies(tmp_path: Path, names: tuple[str, ...]) -> Path:
    """Problems that are all relu: any of the scripted replies fits any of them, so the
    order in which the concurrent loops take replies does not matter."""
    d = tmp_path / "problems"
    d.mkdir()
    for name in names:
        shutil.copy(EX / "problems" / "relu.py", d / f"{name}.py")
    return d


class CountingSandbox(Sandbox):
    """A CPU sandbox of SLOTS slots that counts the sandboxes built and the slots held at once
    (a verification holds one slot for its judge and candidate jobs)."""

    SLOTS = 2
    built: list[CountingSandbox] = []
    lock = threading.Lock()
    held = 0
    peak = 0

    def __init__(self, **kw):
        kw.pop("jobs_per_gpu", None)  # CPU: the slots are max_workers
        super().__init__(max_workers=self.SLOTS, **kw)
        CountingSandbox.built.append(self)

    @contextmanager
    def slot(self, **kw):
        with super().slot(**kw) as s:
            with CountingSandbox.lock:
                CountingSandbox.held += 1
                CountingSandbox.peak = max(CountingSandbox.peak, CountingSandbox.held)
            try:
                time.sleep(0.05)  # widen the window in which an over-subscription shows
                yield s
            finally:
                with CountingSandbox.lock:
                    CountingSandbox.held -= 1


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.setattr(CountingSandbox, "built", [])
    monkeypatch.setattr(CountingSandbox, "held", 0)
    monkeypatch.setattr(CountingSandbox, "peak", 0)
    monkeypatch.setattr(Verifier, "sandbox_factory", CountingSandbox)
    return CountingSandbox


def loop_bench(capsys, problems: Path, replies: str, out: Path, *extra: str) -> tuple[int, dict]:
    args = ["bench", str(problems), "--mode", "loop", "--samples", "1", "--backend", "replay"]
    args += ["--replies", replies, "--out", str(out), *FAST_CLI, *extra, "--json"]
    rc = main(args)
    return rc, last_json(capsys)


def spans(out: Path, names: tuple[str, ...]) -> list[tuple[float, float]]:
    """Each problem's loop, from start to end (its attempts' records)."""
    result = []
    for name in names:
        s = json.loads((out / name / "00" / "sample.json").read_text())
        result.append((s["started_at"], s["ended_at"]))
    return result


def test_loops_of_several_problems_overlap(tmp_path, capsys, counting, monkeypatch):
    monkeypatch.setattr(CountingSandbox, "SLOTS", 3)
    names = ("relu_a", "relu_b", "relu_c")
    problems = relu_copies(tmp_path, names)
    replies = write_replies(tmp_path / "r.jsonl", [GOOD_RELU] * 3)
    out = tmp_path / "out"
    rc, r = loop_bench(capsys, problems, replies, out, "--loop-jobs", "3")
    assert rc == 0 and r["status"] == "ok"
    assert [p["outcome"] for p in r["problems"]] == ["ok"] * 3
    s = spans(out, names)
    # one after another (the old runner), the last start came after the first end
    assert max(a for a, _ in s) < min(b for _, b in s), s
    assert len(counting.built) == 1  # one Verifier's sandbox for every loop


def test_concurrent_jobs_never_exceed_the_slots(tmp_path, capsys, counting):
    names = ("relu_a", "relu_b", "relu_c")
    problems = relu_copies(tmp_path, names)
    replies = write_replies(tmp_path / "r.jsonl", [GOOD_RELU] * 3)
    out = tmp_path / "out"
    rc, r = loop_bench(capsys, problems, replies, out, "--loop-jobs", "3")
    assert rc == 0 and [p["outcome"] for p in r["problems"]] == ["ok"] * 3
    # three loops at once, but each run's own Verifier (3 sandboxes of 2 slots) would allow 6
    assert len(counting.built) == 1
    assert 1 <= counting.peak <= CountingSandbox.SLOTS
    assert counting.held == 0


def test_a_replay_script_runs_one_loop_at_a_time_by_default(tmp_path, capsys, counting):
    """Its replies are taken in order: concurrent loops would take each other's."""
    names = ("relu_a", "relu_b")
    problems = relu_copies(tmp_path, names)
    replies = write_replies(tmp_path / "r.jsonl", [GOOD_RELU] * 2)
    out = tmp_path / "out"
    rc, r = loop_bench(capsys, problems, replies, out)
    assert rc == 0 and r["status"] == "ok"
    (a0, a1), (b0, b1) = spans(out, names)
    assert a1 <= b0


def test_loop_jobs_must_be_positive(tmp_path, capsys):
    rc, r = loop_bench(capsys, tmp_path, "r.jsonl", tmp_path / "out", "--loop-jobs", "0")
    assert rc == 2 and "--loop-jobs" in r["message"]


def test_loop_jobs_in_sample_mode_is_refused():
    """A flag that would change nothing is bad input, not silently ignored."""
    from agent.bench import BenchConfig
    from tools.core.errors import BadInputError

    with pytest.raises(BadInputError, match="--loop-jobs applies to --mode loop only"):
        BenchConfig(out="o", mode="sample", loop_jobs=2)
    assert BenchConfig(out="o", mode="loop", loop_jobs=2).loop_jobs == 2


def test_sigint_stops_the_loops_keeps_what_finished_and_the_rerun_resumes(tmp_path, capsys):
    """SIGINT while one loop spins in its candidate (far past what the test waits) and the
    other has finished: the bench stops within seconds, keeps the finished problem, writes the
    report (exit 1); the rerun runs only the interrupted problem, from the start."""
    names = ("relu_a", "relu_b")
    problems = relu_copies(tmp_path, names)
    replies = write_replies(tmp_path / "r.jsonl", [SPINNING_RELU, GOOD_RELU])
    out = tmp_path / "out"
    args = ["--mode", "loop", "--samples", "1", "--loop-jobs", "2", "--backend", "replay"]
    args += ["--replies", replies, "--out", str(out)]
    args += ["--trials", "2", "--target", "none", "--timeout", "300"]
    cmd = [sys.executable, "-m", "agent", "bench", str(problems), *args, "--json"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_default,
    )  # fmt: skip
    try:
        t0 = time.monotonic()
        while proc.poll() is None and time.monotonic() - t0 < 240:
            done = [n for n in names if (out / n / "done.json").exists()]
            if done:
                break
            time.sleep(0.2)
        assert done, proc.stderr.read() if proc.poll() is not None else "too slow"
        time.sleep(1.0)  # the spinning loop is in its job by now
        proc.send_signal(signal.SIGINT)
        t1 = time.monotonic()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - t1 < 30, "the loops were waited for, not stopped"
    assert proc.returncode == 1, stderr
    r = json.loads(stdout.strip().splitlines()[-1])
    assert r["status"] == "incomplete" and r["interrupted"] is True
    (finished,) = done
    (spun,) = [n for n in names if n != finished]
    outcomes = {p["problem"]: (p["n"], p["outcome"]) for p in r["problems"]}
    assert outcomes == {finished: (1, "ok"), spun: (0, "incomplete")}
    assert not (out / spun / "done.json").exists() and not (out / spun / "00").exists()
    assert not (out / spun / "error.json").exists()
    kept = (out / finished / "00" / "sample.json").stat().st_mtime_ns

    # The rerun (in-process): only the interrupted problem runs (one reply: asking twice fails)
    args[args.index(replies)] = write_replies(tmp_path / "r2.jsonl", [GOOD_RELU])
    assert main(["bench", str(problems), *args, "--json"]) == 0
    r = last_json(capsys)
    assert [q["outcome"] for q in r["problems"]] == ["ok", "ok"]
    assert (out / finished / "00" / "sample.json").stat().st_mtime_ns == kept
    assert (out / spun / "done.json").exists()


def test_a_compiler_bench_needs_no_openai_package(monkeypatch):
    """On the H200 the loop bench died importing `openai` (a wheel it needs was missing) before
    any problem ran, though the compiler backend uses no model: the client is imported only for
    a backend that can be an OpenAI one."""
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now raises ImportError
    monkeypatch.delitem(sys.modules, "agent.llm.openai_backend", raising=False)
    from agent.bench.loop import _OneCallAtATime, _shared_backend

    class Scripted:
        def generate(self, *a, **k):
            return ["x"]

    assert _shared_backend(None) is None
    shared = _shared_backend(Scripted())
    assert isinstance(shared, _OneCallAtATime) and shared.generate() == ["x"]
