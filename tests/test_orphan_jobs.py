"""A candidate's job never outlives its agent (seen: a job in an endless loop ran on for 23
minutes at 85% of a core after its agent was killed).

The cause: multiprocessing gives every forkserver child a copy of the pipe end that keeps the
forkserver alive, so the forkserver outlived the agent and the job's PR_SET_PDEATHSIG (set for
the forkserver's death) never fired. Each mechanism is tested on its own here: the kernel's
(the forkserver exits with the agent, its jobs with it), the job's watch on its agent (whatever
the job's parent is), the wall-clock ceiling and the CPU-time ceiling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def spin(channel) -> None:
    """An interactive job that says it started, then never ends (a kernel's endless loop)."""
    channel.send("spinning")
    while True:
        pass


# The agent: starts two endless jobs the way the product does (forkserver, guard, limits),
# the second without the agent watch (so that only the kernel's PR_SET_PDEATHSIG can end it),
# waits until both run, prints the pids, then waits to be killed.
AGENT = """
import json, sys, time
from multiprocessing import forkserver, resource_tracker
import tools.sandboxing.sandbox as sandbox
from tools.sandboxing.limits import Limits

sb = sandbox.Sandbox(device="cpu", max_workers=2)
lim = Limits(timeout_s=120)
with sb.slot() as first, sb.slot() as second:
    watched = sb.start(first, "tests.test_orphan_jobs:spin", limits=lim)
    sandbox.agent_identity = lambda: None  # no watch: only PR_SET_PDEATHSIG can end this one
    unwatched = sb.start(second, "tests.test_orphan_jobs:spin", limits=lim)
    for job in (watched, unwatched):
        assert job.recv(timeout=60) == "spinning"
    print(json.dumps({
        "jobs": [watched.proc.pid, unwatched.proc.pid],
        "helpers": [forkserver._forkserver._forkserver_pid, resource_tracker._resource_tracker._pid],
    }), flush=True)
    time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _wait_gone(pids: list[int], within_s: float) -> list[int]:
    """The pids still running after `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _running(p)]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        if _running(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_jobs_die_with_their_agent_through_the_kernel_and_through_their_watch():
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pids: dict = {"jobs": [], "helpers": []}
    try:
        line = agent.stdout.readline()
        assert line, agent.stderr.read()
        pids = json.loads(line)
        assert all(map(_running, pids["jobs"]))
        agent.kill()
        agent.wait(timeout=10)
        # the watched job within a second or so; the other once the forkserver has finished
        # exiting (a few seconds with torch loaded, on a busy 2-core machine)
        left = _wait_gone(pids["jobs"], within_s=20)
        assert not left, f"jobs {left} outlived their agent"
        assert not _wait_gone(pids["helpers"][:1], within_s=10), "the forkserver outlived its agent"
    finally:
        agent.kill()
        agent.wait(timeout=10)
        _kill(pids["jobs"] + pids["helpers"])
        agent.stdout.close()
        agent.stderr.close()


# A job stand-in without the sandbox: `tools/__init__` imports torch (seconds); the watch and
# the limits need none of it, so the stand-in loads `tools.sandboxing.job_process` alone. It runs `call`,
# says "ready", then loops for ever (no core file if a signal ends it).
JOB = """
import os, resource, sys, types
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
pkg = types.ModuleType("tools")
pkg.__path__ = [os.path.join(sys.argv[1], "tools")]
sys.modules["tools"] = pkg
import tools.sandboxing.job_process as jp

exec(sys.argv[2], {"jp": jp, "os": os})
print("ready", flush=True)
while True:
    pass
"""


def _start_stand_in(call: str, cwd) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", JOB, str(ROOT), call],
        cwd=cwd,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stand_in(call: str, cwd) -> subprocess.Popen:
    job = _start_stand_in(call, cwd)
    if job.stdout.readline() != "ready\n":
        job.kill()
        job.wait()
        pytest.fail(f"the stand-in job did not start: {call}")
    return job


def _ended_within(job: subprocess.Popen, seconds: float) -> int | None:
    try:
        return job.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def test_the_watch_ends_a_job_when_its_agent_ends_though_the_agent_is_not_its_parent(tmp_path):
    agent = subprocess.Popen(["sleep", "300"])
    job = None
    try:
        identity = (agent.pid, _start_ticks(agent.pid))
        job = _stand_in(f"jp.watch_agent({identity}, 120)", tmp_path)
        time.sleep(0.5)
        assert job.poll() is None  # the agent lives: so does the job
        agent.kill()  # not reaped yet: a zombie agent is a dead one
        assert _ended_within(job, 5) == -signal.SIGKILL
    finally:
        agent.kill()
        agent.wait()
        if job is not None:
            job.kill()
            job.wait()
            job.stdout.close()


def test_a_job_whose_agent_is_already_gone_does_not_start(tmp_path):
    agent = subprocess.Popen(["sleep", "300"])
    identity = (agent.pid, _start_ticks(agent.pid))
    agent.kill()
    agent.wait()
    job = _start_stand_in(f"jp.watch_agent({identity}, 120)", tmp_path)
    try:
        assert _ended_within(job, 20) == -signal.SIGKILL
        assert job.stdout.read() == ""
    finally:
        job.kill()
        job.wait()
        job.stdout.close()


def test_a_job_past_its_timeout_ends_though_its_agent_lives(tmp_path):
    job = _stand_in("jp.watch_agent(jp.agent_identity(), 0.5, grace_s=0.5)", tmp_path)
    try:
        assert _ended_within(job, 5) == -signal.SIGKILL
    finally:
        job.kill()
        job.wait()
        job.stdout.close()


def test_cpu_time_is_capped_above_what_the_timeout_allows_on_every_core(tmp_path):
    check = (
        "import resource\n"
        "jp.cap_cpu_time(1000)\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
        "assert soft >= 1000 * len(os.sched_getaffinity(0)) and hard > soft, (soft, hard)\n"
        "jp.cap_cpu_time(0.2, grace_s=0.5)\n"
    )
    job = _stand_in(check, tmp_path)
    try:
        assert _ended_within(job, 20) in (-signal.SIGXCPU, -signal.SIGKILL)
    finally:
        job.kill()
        job.wait()
        job.stdout.close()


def test_a_forkserver_is_stopped_only_after_its_jobs_ended():
    """Switching the forkserver's interpreter mode stops the old one, whose jobs now die with it:
    the switch waits until it has no children."""
    from tools.sandboxing.sandbox import _children, _wait_for_children

    parent = subprocess.Popen(["sh", "-c", "sleep 1 & wait"])
    try:
        deadline = time.monotonic() + 5
        while not _children(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(_children(parent.pid)) == 1
        t0 = time.monotonic()
        _wait_for_children(parent.pid)
        assert not _children(parent.pid) and time.monotonic() - t0 > 0.3
    finally:
        parent.kill()
        parent.wait()


def _start_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return int(data[data.rindex(b")") + 2 :].split()[19])
