"""The job's side of the sandbox: the entry point of a job process (`child_main`: its own
session, private directory and caches, limits, the guard, then the job function), the channel
it talks to the parent through, the reply format both sides share (plain data only, read
back with the weights-only unpickler: `load_reply`), and how a job ends with its agent
(`agent_identity`, `watch_agent`, `cap_cpu_time`).

A job never outlives the agent that started it, whatever the process tree (agent -> forkserver
-> job -> toolchain programs, or agent -> job under spawn), by three independent means:
- PR_SET_PDEATHSIG: the kernel kills the job when its parent (the forkserver, which exits when
  the agent does) dies. This needs the job to give up its copy of the forkserver's lifeline;
- a watcher thread, started before the candidate runs, waits on the agent's process (a pidfd,
  or polling) and kills the job's process group when the agent is gone, or when the job runs
  past its own timeout plus a grace period (the agent would have killed it by then);
- RLIMIT_CPU: CPU time beyond what the job could use within its timeout on every core it may
  run on; the kernel ends the job even if nothing above could run.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import signal
import tempfile
import threading
import time
import traceback
from typing import Any

from tools.sandboxing.isolation import Isolation, make_undumpable
from tools.sandboxing.isolation import drop_privileges as _drop_privileges
from tools.sandboxing.limits import Limits, apply_rlimits

_JOB: dict[str, Any] = {}
"""This job's start, as `drop_privileges` needs it: its directory, device, parent and agent
pids, and whether it could be made not dumpable."""


def child_main(
    conn,
    workdir: str,
    env: dict[str, str],
    lim: Limits,
    device: str,
    agent: tuple[int, int] | None = None,
) -> None:
    """Entry point of a job process. Never returns: ends with os._exit. `agent`: the
    `agent_identity()` of the process that started the job; the job ends when it does."""
    import sys

    # First: no process of this user may read this job's memory or ptrace it (the judge holds
    # the reference outputs; a candidate is a sibling job). A forkserver child is not dumpable
    # from its fork already (`tools.sandboxing._undumpable`); a spawned one from here.
    undumpable = make_undumpable()
    parent = os.getppid()  # who started this process (the forkserver, or the agent under spawn)
    try:
        os.setsid()
    except OSError:
        pass
    _drop_forkserver_lifeline()
    _die_with_parent(parent)
    if agent is not None:
        watch_agent(agent, lim.timeout_s)
    # stdout/stderr of the job (and of anything it spawns) go to files the parent can read.
    for fd, name in ((1, "stdout.log"), (2, "stderr.log")):
        f = os.open(os.path.join(workdir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.dont_write_bytecode = True
    os.chdir(workdir)
    os.environ.update(env)
    cache = os.path.join(workdir, "triton_cache")
    os.makedirs(cache, exist_ok=True)  # may already hold a copy of this candidate's own cache
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ["TMPDIR"] = workdir
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(workdir, "inductor_cache")
    tempfile.tempdir = workdir
    apply_rlimits(lim, device)
    cap_cpu_time(lim.timeout_s)
    _JOB.update(
        workdir=workdir,
        device=device,
        parent=parent,
        agent=agent[0] if agent is not None else None,
        undumpable=undumpable,
    )
    # Opened before the guard and the candidate's lower privileges: the stats are written to
    # this descriptor when the job function returns (`_profiled`).
    profile_fd = _open_profile(env.get(PROFILE_ENV))
    try:
        fn_ref, args, kwargs, interactive = pickle.loads(conn.recv_bytes())
        from tools.job import guard

        if not lim.network:
            guard.isolate_network()
        if lim.guard:
            guard.install(workdir)
        func = _resolve(fn_ref)
        if interactive:
            args = (Channel(conn), *args)
        with _profiled(profile_fd):
            result = ("ok", func(*args, **kwargs))
    except BaseException:  # noqa: BLE001 - everything becomes a message for the parent
        result = ("error", traceback.format_exc(limit=-12))
    try:
        try:
            data = _dump_reply(result)
        except Exception:
            data = _dump_reply(("error", "result not serialisable:\n" + traceback.format_exc()))
        # Read what the parent sent and the job did not: a socket closed with unread data
        # resets the connection, and the parent would lose this reply.
        while conn.poll(0):
            conn.recv_bytes()
        conn.send_bytes(data)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


PROFILE_ENV = "TA_JOB_PROFILE"
"""A job's environment key: a file path that the job writes cProfile's stats of its job function
to (`marshal`, what `pstats.Stats` reads). Set by `tools.sandboxing.sandbox` from the agent's own
`TRITON_AGENT_JOB_PROFILE` (a directory), for benchmarks/depth_scaling.py: where a job's time
goes. The profile function is installed before the job function runs, so the integrity
check's hooks (taken inside the job) count it among the harness's own."""


def _open_profile(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError:
        return None


@contextlib.contextmanager
def _profiled(fd: int | None):
    """Run the body under cProfile and write its stats to `fd`, when there is one."""
    if fd is None:
        yield
        return
    import cProfile
    import marshal

    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        try:
            prof.create_stats()
            os.write(fd, marshal.dumps(prof.stats))
            os.close(fd)
        except (OSError, ValueError):
            pass


def drop_privileges(*, change_uid: bool = True, cuda_ipc: bool = True) -> Isolation:
    """Called by a candidate's job (its worker) after the harness's own set-up and before the
    candidate is imported: this job process gives up every way into the judge, the agent and
    their files it can (`tools.sandboxing.isolation.drop_privileges`: uid `nobody` and no capabilities
    where it runs as root; uid 0 without capabilities on a GPU while `cuda_ipc`, the job
    handing its outputs over by CUDA IPC, which fails between users) and returns what it
    achieved, for the verdict's evidence. Outside a
    job (no `child_main`) it drops nothing and says so."""
    if not _JOB:
        return Isolation(
            mode="unsupported",
            candidate_uid=os.geteuid() if hasattr(os, "geteuid") else None,
            caps_dropped=False,
            no_new_privs=False,
            judge_dumpable=None,
            agent_readable=None,
            notes=["not in a sandbox job: nothing was dropped"],
        )
    if "isolation" not in _JOB:  # once: a second call would find nothing left to drop
        _JOB["isolation"] = _drop_privileges(
            _JOB["workdir"],
            agent_pid=_JOB["agent"],
            parent_pid=_JOB["parent"],
            device=_JOB["device"],
            judge_dumpable=not _JOB["undumpable"],
            change_uid=change_uid,
            cuda_ipc=cuda_ipc,
        )
    return _JOB["isolation"]


class Channel:
    """The job's side of an interactive session: `recv()` the parent's next message (plain
    data), `send()` plain data back (tensors, numbers, strings, bytes, containers)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def recv(self) -> Any:
        return pickle.loads(self._conn.recv_bytes())

    def send(self, msg: Any) -> None:
        self._conn.send_bytes(_dump_reply(("msg", msg)))


def _drop_forkserver_lifeline() -> None:
    """Close this job's copy of the forkserver's "alive" pipe.

    multiprocessing hands every forkserver child the write end of the pipe whose EOF tells the
    forkserver that its agent is gone. A job that keeps it keeps the forkserver running after
    its agent died, so the forkserver never exits and the job's PR_SET_PDEATHSIG never fires:
    seen here, a candidate in an endless loop kept a core busy for 23 minutes after its agent
    was killed. A job starts no processes through the forkserver, so it does not need it."""
    try:
        from multiprocessing import forkserver

        server = forkserver._forkserver
        fd = getattr(server, "_forkserver_alive_fd", None)
        if forkserver.get_inherited_fds() is None or fd is None:
            return  # not a forkserver child (spawn)
        server._forkserver_alive_fd = None
        os.close(fd)
    except (ImportError, AttributeError, OSError):
        pass


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this job when `parent`, the process that started it, dies (the forkserver,
    which exits with the agent once no job holds its lifeline; the agent itself under spawn).
    A job leads its own session, so a killed agent's jobs would otherwise run on: seen here, an
    interpreted 1 GiB job and its ptxas outlived their agent by minutes. A parent that died
    before the call is caught by comparing the parent again after it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # reparented: the parent died before the call
        _end_job()


# ---------------------------------------------------------------------------------------------
# The agent watch: a backstop that does not depend on the process tree


WALL_GRACE_S = 30.0
"""A job still running this long after its own timeout has no agent waiting for it: the agent
stops reading a job's messages at its deadline (which starts before the job does) and kills it."""

CPU_GRACE_S = 60.0
"""CPU seconds a job may use beyond its timeout times the cores it may run on."""

POLL_S = 1.0
"""How often the agent is looked at where its process cannot be waited on (no pidfd)."""


def agent_identity() -> tuple[int, int]:
    """This process as a job's agent: its pid and its start time (clock ticks after boot;
    0 where /proc cannot say), so that a later process with the same pid is not taken for it."""
    pid = os.getpid()
    stat = _proc_stat(pid)
    return pid, stat[1] if stat else 0


def watch_agent(
    agent: tuple[int, int], timeout_s: float | None, grace_s: float = WALL_GRACE_S
) -> None:
    """Kill this job's process group when the agent process ends, or `grace_s` after
    `timeout_s` has passed. Runs in a daemon thread started here: call it before the guard's
    lock-down (which refuses new threads) and before any candidate code runs. Ends the job at
    once if the agent is already gone."""
    pid, start = agent
    deadline = None
    if timeout_s is not None and math.isfinite(timeout_s):
        deadline = time.monotonic() + timeout_s + grace_s
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        _end_job()
    except (OSError, AttributeError):  # no pidfd (old kernel, not Linux): poll instead
        pass
    if not _agent_alive(pid, start):  # includes a pid reused before pidfd_open
        _end_job()
    # The functions the thread calls are bound now, before the candidate's code could replace
    # them in their modules.
    threading.Thread(
        target=_watch,
        args=(pid, start, deadline, pidfd, _agent_alive, _end_job),
        name="ta-agent-watch",
        daemon=True,
    ).start()


def _watch(
    pid: int,
    start: int,
    deadline: float | None,
    pidfd: int | None,
    alive,
    end,
    _monotonic=time.monotonic,
    _sleep=time.sleep,
) -> None:
    """The watcher thread's loop."""
    import select

    poller = None
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
    while True:
        wait = None if poller is not None else POLL_S
        if deadline is not None:
            left = deadline - _monotonic()
            if left <= 0:
                end()
            wait = left if wait is None else min(wait, left)
        if poller is not None:
            try:
                woke = poller.poll(None if wait is None else max(1, int(wait * 1000)))
            except (OSError, ValueError):
                woke, poller = [], None
            if not woke:
                continue
            # the agent exited, or the descriptor was closed or replaced: look, then poll
            poller = None
        else:
            _sleep(wait)
        if not alive(pid, start):
            end()


def _proc_stat(pid: int, _open=open) -> tuple[str, int] | None:
    """(state, start time) of a process from /proc; None if it does not exist or /proc cannot
    be read."""
    try:
        with _open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    try:
        fields = data[data.rindex(b")") + 2 :].split()
        return fields[0].decode(), int(fields[19])  # fields 3 (state) and 22 (starttime)
    except (ValueError, IndexError):
        return None


def _agent_alive(pid: int, start: int, _kill=os.kill) -> bool:
    stat = _proc_stat(pid)
    if stat is None:
        if os.path.isdir("/proc/self"):
            return False  # /proc works and the agent is not in it
        try:
            _kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass
        return True
    state, ticks = stat
    return state not in ("Z", "X", "x") and (not start or ticks == start)


def _end_job(
    _getpid=os.getpid, _getpgrp=os.getpgrp, _killpg=os.killpg, _kill=os.kill, _exit=os._exit
) -> None:
    """SIGKILL this job and what it started (its process group, when it leads one: never the
    agent's group), then exit in case the signal could not be sent."""
    me = _getpid()
    try:
        if _getpgrp() == me:
            _killpg(me, signal.SIGKILL)
        _kill(me, signal.SIGKILL)
    except OSError:
        pass
    _exit(137)


def cap_cpu_time(timeout_s: float | None, grace_s: float = CPU_GRACE_S) -> None:
    """RLIMIT_CPU: the CPU time the job could use within `timeout_s` on every core it may run
    on, plus `grace_s` and what it used already. An honest job never reaches it (the agent kills
    it at its timeout); a job nothing else could stop gets SIGXCPU, then SIGKILL. Inherited by
    the programs the job starts (each counts its own time)."""
    import resource

    if timeout_s is None or not math.isfinite(timeout_s):
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + timeout_s * cores + grace_s)
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        new_hard = soft + 5  # SIGKILL 5 s after SIGXCPU (which a handler could catch)
        if hard != resource.RLIM_INFINITY:
            soft, new_hard = min(soft, hard), min(new_hard, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, new_hard))
    except (ValueError, OSError):
        pass


def _plain(obj: Any, depth: int = 0) -> Any:
    """A job's return value as plain data: tensors, numbers, strings, bytes, None, dtypes and
    devices in dicts, lists and tuples (dataclasses become dicts, anything else its repr)."""
    import dataclasses

    import torch

    if depth > 50:
        return "<nested too deep>"
    if obj is None or type(obj) in (bool, int, float, str, bytes):
        return obj
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t if type(t) is torch.Tensor else t.as_subclass(torch.Tensor)
    if isinstance(obj, (torch.dtype, torch.device)):
        return obj
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, dict):
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(_plain(v, depth + 1) for v in obj)
    if isinstance(obj, (list, set, frozenset)):
        return [_plain(v, depth + 1) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj), depth + 1)
    item = getattr(obj, "item", None)  # numpy scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        try:
            return _plain(item(), depth + 1)
        except Exception:
            pass
    return repr(obj)[:500]


def _dump_reply(result: tuple) -> bytes:
    import io

    import torch

    buf = io.BytesIO()
    torch.save(_plain(result), buf)
    return buf.getvalue()


def load_reply(data: bytes) -> tuple[str, Any]:
    """Read a job's reply with torch's weights-only unpickler.

    The job process runs untrusted code, which can write anything to the reply pipe (or replace
    the worker's own reply). A plain `pickle.loads` here would run whatever callable the bytes
    name *in the agent's process*; the weights-only unpickler only rebuilds tensors, dtypes,
    numbers, strings and containers, so a forged reply can at worst be wrong, never execute.
    """
    import io
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reply = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] in ("ok", "error", "msg")):
        raise ValueError("malformed reply")
    if reply[0] == "error" and not isinstance(reply[1], str):
        raise ValueError("malformed error reply")
    return reply


def _resolve(ref: str):
    import importlib

    module, _, name = ref.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
