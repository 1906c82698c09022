"""tools.sandboxing.slots.SlotPool: shared jobs share a GPU; an exclusive (timing) job has it alone."""

from __future__ import annotations

import threading
import time

from tools.sandboxing.slots import SlotPool


def test_shared_jobs_fill_every_slot_and_exclusive_takes_a_whole_device():
    pool = SlotPool(["cuda:0", "cuda:0", "cuda:1", "cuda:1"])
    a, b = pool.acquire(), pool.acquire()
    assert a == [0] and b == [1]  # both on GPU 0
    assert pool.acquire(exclusive=True) == [2, 3]  # GPU 1 is free: all of it
    pool.release(a)
    pool.release(b)
    assert pool.acquire(exclusive=True) == [0, 1]


def test_exclusive_waits_for_running_shared_jobs_and_blocks_new_ones():
    pool = SlotPool(["cuda:0", "cuda:0"])
    events: list[str] = []
    first = pool.acquire()
    events.append("shared 1 start")

    def timing():
        got = pool.acquire(exclusive=True)
        events.append("exclusive start")
        time.sleep(0.05)
        events.append("exclusive end")
        pool.release(got)

    def late_shared():
        got = pool.acquire()
        events.append("shared 2 start")
        pool.release(got)

    t1 = threading.Thread(target=timing)
    t1.start()
    time.sleep(0.05)  # the timing job is now waiting for slot 0
    t2 = threading.Thread(target=late_shared)
    t2.start()
    time.sleep(0.05)
    # slot 1 is free, but a shared job must not start while a timing job waits for the device
    assert events == ["shared 1 start"], events
    events.append("shared 1 end")
    pool.release(first)
    t1.join(2)
    t2.join(2)
    assert events == [
        "shared 1 start",
        "shared 1 end",
        "exclusive start",
        "exclusive end",
        "shared 2 start",
    ], events


def test_nothing_overlaps_an_exclusive_job_under_load():
    pool = SlotPool(["cuda:0"] * 4)
    running = {"shared": 0, "exclusive": 0}
    overlaps: list[dict] = []
    lock = threading.Lock()

    def job(exclusive: bool):
        got = pool.acquire(exclusive)
        kind = "exclusive" if exclusive else "shared"
        with lock:
            running[kind] += 1
            if running["exclusive"] and (running["shared"] or running["exclusive"] > 1):
                overlaps.append(dict(running))
        time.sleep(0.002)
        with lock:
            running[kind] -= 1
        pool.release(got)

    threads = [threading.Thread(target=job, args=(i % 5 == 0,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert overlaps == []


def test_an_exclusive_job_runs_in_a_real_sandbox():
    from tools.sandboxing.sandbox import Sandbox

    sb = Sandbox(device="cpu", max_workers=2)
    out = sb.run("builtins:eval", "6 * 7", timeout=60, exclusive=True)
    assert out.kind == "ok" and out.value == 42, out.error


def test_jobs_per_gpu_must_be_positive():
    import pytest

    from tools.core.errors import BadInputError
    from tools.orchestrate.verify import VerifyOptions

    with pytest.raises(BadInputError, match="jobs-per-gpu"):
        VerifyOptions(jobs_per_gpu=0)


class _FakePausable:
    def __init__(self):
        self.events: list[str] = []

    def pause(self):
        self.events.append("pause")

    def resume(self):
        self.events.append("resume")


def test_an_exclusive_job_stops_pausable_drafts_instead_of_waiting_for_them():
    pool = SlotPool(["cuda:0", "cuda:0", "cuda:0"], capacity_mb={"cuda:0": 100_000})
    draft = _FakePausable()
    held = pool.acquire(mem_mb=10_000, pausable=draft)  # a draft, for minutes
    got: list = []
    t = threading.Thread(target=lambda: got.append(pool.acquire(exclusive=True)))
    t.start()
    t.join(2)
    assert got == [[0, 1, 2]], "the timing job waited for a pausable draft"
    assert draft.events == ["pause"]
    # nothing else starts meanwhile, and a second exclusive job waits
    late: list = []
    threading.Thread(target=lambda: late.append(pool.acquire()), daemon=True).start()
    time.sleep(0.05)
    assert late == []
    pool.release(got[0])
    assert draft.events == ["pause", "resume"]
    time.sleep(0.05)
    assert late == [[1]]  # the draft still holds slot 0
    pool.release(late[0])
    pool.release(held)
    assert pool.acquire(exclusive=True) == [0, 1, 2] and draft.events == ["pause", "resume"]


def test_an_exclusive_job_still_waits_for_verification_jobs_beside_a_draft():
    pool = SlotPool(["cuda:0", "cuda:0"])
    draft = _FakePausable()
    d = pool.acquire(pausable=draft)
    v = pool.acquire()  # a verification job: never stopped
    got: list = []
    t = threading.Thread(target=lambda: got.append(pool.acquire(exclusive=True)))
    t.start()
    time.sleep(0.05)
    assert got == [] and draft.events == []
    pool.release(v)
    t.join(2)
    assert got == [[0, 1]] and draft.events == ["pause"]
    pool.release(got[0])
    pool.release(d)


def test_a_draft_too_large_to_stay_beside_the_timing_job_is_waited_for():
    pool = SlotPool(["cuda:0", "cuda:0"], capacity_mb={"cuda:0": 100_000})
    draft = _FakePausable()
    d = pool.acquire(mem_mb=60_000, pausable=draft)  # more than PAUSED_SHARE of the device
    got: list = []
    t = threading.Thread(target=lambda: got.append(pool.acquire(exclusive=True)))
    t.start()
    time.sleep(0.05)
    assert got == [] and draft.events == []
    pool.release(d)
    t.join(2)
    assert got == [[0, 1]]
    pool.release(got[0])


def test_a_stopped_draft_that_ends_keeps_its_slot_until_the_timing_job_is_done():
    pool = SlotPool(["cuda:0", "cuda:0"])
    draft = _FakePausable()
    d = pool.acquire(pausable=draft)
    ex = pool.acquire(exclusive=True)
    pool.release(d)  # killed while stopped (an interrupt)
    late: list = []
    threading.Thread(target=lambda: late.append(pool.acquire()), daemon=True).start()
    time.sleep(0.05)
    assert late == [], "a job started beside a timing job"
    pool.release(ex)
    time.sleep(0.05)
    assert late == [[0]] and draft.events == ["pause"]  # nothing to continue


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return data[data.rindex(")") + 2]


def test_pausable_stops_and_continues_a_real_process_group():
    import subprocess
    import sys

    from tools.sandboxing.slots import Pausable

    code = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        time.sleep(0.5)
        p = Pausable()
        p.attach(proc.pid)
        p.pause()
        time.sleep(0.2)
        assert _state(proc.pid) == "T" and p.paused
        kids = [int(c) for c in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]
        assert kids and all(_state(k) == "T" for k in kids)  # what it started, too
        p.resume()
        time.sleep(0.1)
        assert _state(proc.pid) != "T" and all(_state(k) != "T" for k in kids)
        assert 0.2 <= p.paused_s() < 5
    finally:
        import os
        import signal

        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_stopped_jobs_deadline_moves_by_the_time_it_was_stopped():
    from tools.sandboxing.limits import Limits
    from tools.sandboxing.sandbox import Sandbox
    from tools.sandboxing.slots import Pausable

    sb = Sandbox(device="cpu", max_workers=1)

    def run(pause_s: float):
        p = Pausable()
        with sb.slot() as slot:
            job = sb.start(
                slot,
                "time:sleep",
                2.0,
                limits=Limits(timeout_s=1.5),
                _interactive=False,
                _pausable=p,
            )
            if pause_s:
                threading.Timer(0.3, p.pause).start()
                threading.Timer(0.3 + pause_s, p.resume).start()
            return job.end(job.wait_result())

    assert run(0).kind == "timeout"  # the limit holds
    out = run(1.5)  # stopped 1.5 s of its 2 s: the limit moved by that much
    assert out.kind == "ok", out.error


def test_a_free_gpu_is_taken_before_drafts_are_stopped_on_another():
    pool = SlotPool(["cuda:0", "cuda:0", "cuda:1", "cuda:1"])
    draft = _FakePausable()
    d = pool.acquire(pausable=draft)  # on GPU 0
    got = pool.acquire(exclusive=True)
    assert got == [2, 3] and draft.events == []  # GPU 1, nothing stopped
    again = pool.acquire(exclusive=True)  # GPU 1 is taken now: the draft on GPU 0 is stopped
    assert again == [0, 1] and draft.events == ["pause"]
    pool.release(again)
    pool.release(got)
    pool.release(d)
    assert draft.events == ["pause", "resume"]


def test_a_draft_starts_while_a_timing_job_waits_for_a_verification():
    """While an exclusive job waits for a verification job to end, a pausable draft still starts
    (the exclusive job stops it when it starts, so the draft adds no wait); a verification job
    does not (session 19: a bench of level-3 networks ran 2-4 of its 8 slots while timing jobs
    waited for long verifications)."""
    pool = SlotPool(["cuda:0"] * 4, capacity_mb={"cuda:0": 100_000})
    v = pool.acquire(mem_mb=10_000)  # a verification job: never stopped
    got: list = []
    t = threading.Thread(target=lambda: got.append(pool.acquire(exclusive=True)), daemon=True)
    t.start()
    time.sleep(0.05)
    assert got == []  # waiting for the verification
    draft = _FakePausable()
    started: list = []  # starts now, beside the waiting timing job
    threading.Thread(
        target=lambda: started.append(pool.acquire(mem_mb=10_000, pausable=draft)), daemon=True
    ).start()
    time.sleep(0.05)
    assert started == [[1]] and draft.events == []
    late: list = []
    threading.Thread(target=lambda: late.append(pool.acquire()), daemon=True).start()
    big: list = []  # a draft whose memory would hold the timing job back: it waits too
    big_draft = _FakePausable()
    threading.Thread(
        target=lambda: big.append(pool.acquire(mem_mb=45_000, pausable=big_draft)), daemon=True
    ).start()
    time.sleep(0.05)
    assert late == [] and big == []
    pool.release(v)
    t.join(2)
    assert got == [[0, 1, 2, 3]] and draft.events == ["pause"]
    pool.release(got[0])
    assert draft.events == ["pause", "resume"]
    time.sleep(0.05)
    assert sorted(late + big) == [[0], [2]]
