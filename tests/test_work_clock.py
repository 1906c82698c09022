"""A pausable draft job's clocks count working time only (`tools.sandboxing.work_clock`).

On the H200 (session 19) a network's draft was stopped (SIGSTOP) while timing jobs had the GPU,
and its phases ("GEMM tiles 219 s") and its 60 s clock for speed choices counted that time: the
clock ran out after 5 of 17 GEMM sites. The parent now tells the job how long it was stopped
(a ledger file written before each SIGCONT), and the draft's clocks subtract it."""

from __future__ import annotations

import os
import threading
import time

import pytest

from tools.sandboxing import work_clock


def sleeper(wall_s: float) -> tuple[float, float, str | None]:
    """A job: sleep `wall_s` of wall time; (wall time, working time, the ledger's env value)."""
    t0, w0 = time.monotonic(), work_clock.now()
    end = t0 + wall_s
    while time.monotonic() < end:  # a stop mid-sleep: sleep the rest
        time.sleep(max(0.0, min(0.05, end - time.monotonic())))
    return time.monotonic() - t0, work_clock.now() - w0, os.environ.get(work_clock.LEDGER_ENV)


def test_a_stopped_jobs_working_clock_leaves_out_the_time_it_was_stopped():
    from tools.sandboxing.sandbox import Sandbox
    from tools.sandboxing.slots import Pausable

    sb = Sandbox(device="cpu", max_workers=1)
    p = Pausable()
    with sb.slot() as slot:
        job = sb.start(slot, "tests.test_work_clock:sleeper", 2.0, _interactive=False, _pausable=p)
        threading.Timer(1.2, p.pause).start()  # after the worker has imported and started
        threading.Timer(2.7, p.resume).start()  # stopped 1.5 s
        out = job.end(job.wait_result())
    assert out.kind == "ok", out.error
    wall, work, ledger = out.value
    assert ledger  # the job was told where its ledger is
    stopped = p.paused_s()
    assert 1.4 <= stopped <= 2.5
    assert wall >= 2.0
    # the stop fell inside the sleep (or its end): working time is wall time less the stop
    assert work == pytest.approx(wall - stopped, abs=0.35), (wall, work, stopped)


def test_no_ledger_is_wall_time(monkeypatch, tmp_path):
    monkeypatch.delenv(work_clock.LEDGER_ENV, raising=False)
    assert work_clock.paused_s() == 0.0
    ledger = tmp_path / "paused_s"
    monkeypatch.setenv(work_clock.LEDGER_ENV, str(ledger))
    assert work_clock.paused_s() == 0.0  # never stopped: not written
    work_clock.write_ledger(str(ledger), 2.5)
    assert work_clock.paused_s() == 2.5
    assert abs((time.monotonic() - work_clock.now()) - 2.5) < 0.01


def test_a_networks_choice_clock_does_not_run_while_stopped(monkeypatch, tmp_path):
    from tools.draft import choice_clock

    ledger = str(tmp_path / "paused_s")
    monkeypatch.setenv(work_clock.LEDGER_ENV, ledger)
    monkeypatch.setattr(choice_clock, "NETWORK_CHOICES_S", 0.4)
    choice_clock.start()
    assert choice_clock.count(choice_clock.NETWORK_SITES + 1)  # a network's draft
    time.sleep(0.6)
    work_clock.write_ledger(ledger, 0.5)  # 0.5 s of that was spent stopped
    assert not choice_clock.spent()  # 0.1 s of work of its 0.4
    time.sleep(0.5)
    assert choice_clock.spent()
    choice_clock.start()


def test_the_sized_paths_alarm_waits_out_the_time_stopped(monkeypatch, tmp_path):
    from tools.draft.job import _OutOfTime, _time_limit

    ledger = str(tmp_path / "paused_s")
    monkeypatch.setenv(work_clock.LEDGER_ENV, ledger)
    t0 = time.monotonic()
    with pytest.raises(_OutOfTime):
        with _time_limit(work_clock.now() + 0.5):
            work_clock.write_ledger(ledger, 0.6)  # as if stopped 0.6 s
            time.sleep(3)
    assert 1.0 <= time.monotonic() - t0 < 2.5  # 0.5 s of work: 1.1 s of wall time


def test_draft_phases_count_work_and_say_how_long_they_were_stopped(monkeypatch, tmp_path):
    from agent.bench.records import phase_seconds
    from tools.draft.steps import _Phases

    ledger = str(tmp_path / "paused_s")
    monkeypatch.setenv(work_clock.LEDGER_ENV, ledger)
    phases = _Phases()
    time.sleep(0.3)
    work_clock.write_ledger(ledger, 0.25)
    phases.mark("GEMM tiles")
    took, stopped = phases.note("dynamic"), phases.paused_note("dynamic")
    secs = float(took.split("GEMM tiles ")[1].split(" s")[0])
    assert secs < 0.2, took
    assert stopped == "dynamic draft stopped 0.2 s while timing jobs had the GPU (not counted)"
    got = phase_seconds(1.0, "\n".join([took, stopped]), {}, None)
    assert got["draft.dynamic.stopped"] == pytest.approx(0.2)
    assert got["draft.dynamic.GEMM tiles"] == secs
