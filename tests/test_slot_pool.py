"""tools.slots.SlotPool: shared jobs share a GPU; an exclusive (timing) job has it alone."""

from __future__ import annotations

import threading
import time

from tools.slots import SlotPool


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
    from tools.sandbox import Sandbox

    sb = Sandbox(device="cpu", max_workers=2)
    out = sb.run("builtins:eval", "6 * 7", timeout=60, exclusive=True)
    assert out.kind == "ok" and out.value == 42, out.error


def test_jobs_per_gpu_must_be_positive():
    import pytest

    from tools.errors import BadInputError
    from tools.verify import VerifyOptions

    with pytest.raises(BadInputError, match="jobs-per-gpu"):
        VerifyOptions(jobs_per_gpu=0)
