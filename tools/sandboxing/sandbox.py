"""Isolated execution: untrusted candidate code only ever runs in a worker process.

Decision (see docs/sandbox.md): every job gets a *fresh* process forked from a forkserver that has
torch and triton already imported (~0.05 s a process instead of ~1.5 s for spawn + import). A
process never serves two candidates, because a candidate can monkeypatch anything in the process
it runs in (torch, triton, this harness); a fresh process per job is the only way the next job
starts clean. "Worker replaced after a crash" is therefore automatic.

Each job process:
- starts its own session (`setsid`) so a timeout kills it *and* anything it spawned (`killpg`);
- gets a private temporary directory as cwd, `TMPDIR`, `TRITON_CACHE_DIR` and Inductor cache;
- has resource limits: file size (`RLIMIT_FSIZE`), no core dumps, and on CPU an address-space
  cap (`RLIMIT_AS`, on top of what the process maps when the job starts); on CUDA (whose driver reserves huge address ranges) the parent polls the
  resident set size instead and kills the job past the limit;
- has no network: a private network namespace where the OS allows it (root), and in every case a
  Python audit hook that refuses sockets, non-toolchain subprocesses and file writes outside the
  job directory (`tools.job.guard`);
- on a multi-GPU machine sees exactly one GPU (`CUDA_VISIBLE_DEVICES`), one job per GPU at a time.

A job that dies (segfault, `os._exit`, CUDA fault, memory limit) or outlives its timeout becomes a
`JobOutcome` of kind `crash` / `timeout`; the caller goes on.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from tools.core.errors import SandboxError
from tools.sandboxing.isolation import make_undumpable
from tools.sandboxing.job_files import copy_cache, stderr_tail
from tools.sandboxing.job_process import PROFILE_ENV, agent_identity, child_main, load_reply
from tools.sandboxing.limits import Limits, rss_mb
from tools.sandboxing.slots import (
    GPU_SHARE,
    Pausable,
    Slot,
    SlotPool,
    count_gpus,
    gpu_memory_mb,
    visible_device_id,
)
from tools.sandboxing.work_clock import LEDGER_ENV

JOB_PROFILE_DIR_ENV = "TRITON_AGENT_JOB_PROFILE"
"""The agent's environment key naming a directory: when set, every job writes cProfile's stats
of its job function there (`tools.sandboxing.job_process.PROFILE_ENV`; benchmarks/depth_scaling.py)."""

log = logging.getLogger(__name__)


PRELOAD_MODULES = ["tools.sandboxing._undumpable", "tools.sandboxing._preload"]
"""Imported by the forkserver: first, itself and every job it forks not dumpable
(`tools.sandboxing.isolation`); then torch and triton."""


Job = Callable[..., Any] | str
"""A job: its function, or "module:function" (`job_ref`)."""


def job_ref(fn: Job) -> str:
    """The reference a job process imports its function by ("module:qualified.name"): a job is
    named by its function (which editors and import searches follow), and crosses to the job
    as this string, resolved there after the guard is installed (`tools.sandboxing.job_process`), the
    same as one given as a string. Only a function the job can import by that name will do:
    not a lambda, a local function or a bound method (SandboxError)."""
    if isinstance(fn, str):
        return fn
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None)
    obj: Any = sys.modules.get(module) if isinstance(module, str) else None
    for part in name.split(".") if isinstance(name, str) else ["<none>"]:
        obj = getattr(obj, part, None)
    if obj is not fn or module == "__main__":
        raise SandboxError(
            f"a job must be a module-level function its process can import by name; got {fn!r}"
        )
    return f"{module}:{name}"


OutcomeKind = Literal["ok", "error", "crash", "timeout"]

PAUSED_ROOM = 3
"""A pausable job's own watchdog allows this many times its limit (it cannot tell time stopped
from time run); the parent still ends it at its limit plus the time it was stopped."""


@dataclass(kw_only=True)
class JobOutcome:
    """What happened to one job."""

    kind: OutcomeKind
    value: Any = None
    """The job function's return value (kind `ok`)."""
    error: str = ""
    """Traceback of an exception that escaped the job function (kind `error`), or the reason for
    `crash` / `timeout`."""
    exitcode: int | None = None
    signal_name: str | None = None
    stderr_tail: str = ""
    duration_s: float = 0.0
    peak_rss_mb: float | None = None
    resource: bool = False
    """Killed for exceeding its memory limit (a `resource` verdict, not the candidate's crash,
    unless it happens again with the job alone on its device)."""


class Sandbox:
    """Runs job functions in isolated worker processes.

    `device` is `cpu` (Triton interpreter) or `cuda`. On CUDA there are `jobs_per_gpu` slots per
    visible GPU (or per entry of `gpus`, which may repeat a GPU): that many shared jobs run at once
    on one GPU, and an exclusive job still takes all of them; on CPU `max_workers` slots (default:
    the number of cores) and `jobs_per_gpu` is unused.
    Thread-safe: call `run` from several threads to evaluate candidates in parallel.
    """

    job_env: dict[str, str] = {}
    """Environment every job of this sandbox gets, under a job's own `env`: the precision its
    problems run at (`tools.core.problem_dtype.PRECISION_ENV`), set by the Verifier that owns it.
    Replaced, never changed in place (this default is shared)."""

    def __init__(
        self,
        *,
        device: str = "cpu",
        max_workers: int | None = None,
        gpus: Sequence[int] | None = None,
        limits: Limits | None = None,
        start_method: str | None = None,
        interpret: bool | None = None,
        jobs_per_gpu: int = 1,
    ) -> None:
        if device not in ("cpu", "cuda"):
            raise SandboxError(f"unknown sandbox device {device!r} (use cpu or cuda)")
        # A guard, not a range: a count of slots is a positive whole number (the range a user
        # may ask for, `--jobs-per-gpu`, is the option table's row in verify_options).
        if isinstance(jobs_per_gpu, bool) or not isinstance(jobs_per_gpu, int) or jobs_per_gpu < 1:
            raise SandboxError(f"jobs_per_gpu must be a positive integer, got {jobs_per_gpu!r}")
        self.device = device
        self.jobs_per_gpu = jobs_per_gpu if device == "cuda" else 1
        """Shared jobs at once on one GPU (1 on the CPU)."""
        self.interpret = (device == "cpu") if interpret is None else interpret
        """Run kernels under the Triton interpreter (CPU). False for trusted jobs that need real
        Triton objects on a CPU machine, e.g. Inductor drafting; use with start_method="spawn"."""
        self.limits = limits or Limits()
        if device == "cuda":
            ids = list(gpus) if gpus is not None else list(range(count_gpus()))
            if not ids:
                raise SandboxError("device cuda requested but no GPU is visible")
            for i in ids:
                visible_device_id(i)  # a GPU the parent cannot see is an error now, not per job
            # Slots of one GPU share its device string: SlotPool gives an exclusive job all of them.
            self._slots = [Slot(f"cuda:{i}") for i in ids for _ in range(jobs_per_gpu)]
            capacity = {f"cuda:{i}": gpu_memory_mb(i) * GPU_SHARE for i in ids}
        else:
            n = max_workers or os.cpu_count() or 1
            self._slots = [Slot("cpu") for _ in range(n)]
            capacity = {}
        self._pool = SlotPool([s.device for s in self._slots], capacity_mb=capacity)
        self._ctx = _make_context(start_method)
        self.jobs_run = 0
        # The agent relays between the judge and the candidate (and holds what the judge found):
        # no job of this user may read its memory or ptrace it (docs/verification.md, "Isolation
        # per machine").
        self.undumpable = make_undumpable()

    @property
    def slots(self) -> int:
        return len(self._slots)

    def run(
        self,
        fn: Job,
        *args: Any,
        timeout: float | None = None,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        exclusive: bool = False,
        triton_cache_in: str | None = None,
        triton_cache_out: str | None = None,
        gpu_mb: float | None = None,
        pausable: bool = False,
        **kwargs: Any,
    ) -> JobOutcome:
        """Run `fn` (a module-level function, or "module:function") with args in a fresh worker;
        never raises for job faults.
        `exclusive`: no other job runs on the job's device meanwhile (timing).
        `gpu_mb`: device memory the job is expected to need (admission beside other jobs).
        `triton_cache_out`: after the job, copy its private Triton cache there;
        `triton_cache_in`: start the job's private cache as a copy of that directory. Only for
        jobs of the same candidate source (its verification, then its timing): the timing job
        then does not compile again, and no candidate ever sees another candidate's cache.
        `pausable` (a shared job on a GPU): an exclusive job stops it (SIGSTOP) for its own run
        instead of waiting for it to end (`tools.sandboxing.slots.Pausable`); its deadline moves by the time
        it was stopped. For the agent's own long jobs (drafts), never for a candidate's."""
        lim = limits or self.limits
        if timeout is not None:
            lim = Limits(**{**lim.__dict__, "timeout_s": timeout})
        pause = Pausable() if pausable and not exclusive and self.device == "cuda" else None
        with self.slot(exclusive=exclusive, gpu_mb=gpu_mb, pausable=pause) as slot:
            job = self.start(
                slot,
                fn,
                *args,
                limits=lim,
                env=env,
                triton_cache_in=triton_cache_in,
                _interactive=False,
                _pausable=pause,
                **kwargs,
            )
            outcome = job.wait_result()
            return job.end(outcome, triton_cache_out=triton_cache_out)

    @contextmanager
    def slot(
        self,
        *,
        exclusive: bool = False,
        gpu_mb: float | None = None,
        pausable: Pausable | None = None,
    ) -> Iterator[Slot]:
        """Hold one slot (all of a device's slots when `exclusive`) for the jobs started in it:
        jobs that must talk to each other on one GPU (a verification's judge and candidate)."""
        taken = self._pool.acquire(
            exclusive, gpu_mb if self.device == "cuda" else None, pausable=pausable
        )
        try:
            yield self._slots[taken[0]]
        finally:
            self._pool.release(taken)

    def start(
        self,
        slot: Slot,
        fn: Job,
        *args: Any,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        triton_cache_in: str | None = None,
        _interactive: bool = True,
        _pausable: Pausable | None = None,
        **kwargs: Any,
    ) -> JobSession:
        """Start `fn` in a fresh worker on `slot` and return at once. An interactive job (the
        default) is called as `fn(channel, *args, **kwargs)` and talks with the parent through
        `JobSession.send` / `recv` until it returns. End every session with `end()`."""
        fn = job_ref(fn)
        lim = limits or self.limits
        workdir = tempfile.mkdtemp(prefix="ta-job-")
        if triton_cache_in:
            copy_cache(triton_cache_in, os.path.join(workdir, "triton_cache"), rebase=True)
        job_env = {**self.job_env, **(env or {})}
        profile_dir = os.environ.get(JOB_PROFILE_DIR_ENV)
        if profile_dir:  # benchmarks/depth_scaling.py: each job's cProfile stats, one file a job
            name = fn.rsplit(":", 1)[-1]
            job_env[PROFILE_ENV] = os.path.join(
                profile_dir, f"{time.time_ns()}-{os.getpid()}-{name}.pstats"
            )
        if slot.device.startswith("cuda:"):
            job_env["CUDA_VISIBLE_DEVICES"] = visible_device_id(int(slot.device.split(":", 1)[1]))
            job_env["TA_DEVICE"] = "cuda"
        else:
            job_env["TA_DEVICE"] = "cpu"
            if self.interpret:
                job_env["TRITON_INTERPRET"] = "1"
        if _pausable is not None:  # the job's clocks count working time (`work_clock`)
            _pausable.ledger = os.path.join(workdir, "paused_s")
            job_env[LEDGER_ENV] = _pausable.ledger
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        # A pausable job's own watchdog (`watch_agent`) counts wall time, stops included: it
        # gets room for them; the parent's deadline moves by exactly the time it was stopped.
        child_lim = (
            Limits(**{**lim.__dict__, "timeout_s": lim.timeout_s * PAUSED_ROOM})
            if _pausable is not None and lim.timeout_s is not None
            else lim
        )
        proc = self._ctx.Process(
            target=child_main,
            args=(child_conn, workdir, job_env, child_lim, slot.device, agent_identity()),
            daemon=True,
        )
        start = time.monotonic()
        try:
            _start_without_main(proc, interpret=self.interpret)
        except Exception as exc:  # the machinery itself failed
            shutil.rmtree(workdir, ignore_errors=True)
            raise SandboxError(f"could not start a worker process: {exc}") from exc
        child_conn.close()
        if _pausable is not None:
            _pausable.attach(proc.pid)
        self.jobs_run += 1
        job = JobSession(self, proc, parent_conn, workdir, lim, start, _pausable)
        try:
            parent_conn.send_bytes(
                pickle.dumps((fn, args, kwargs, _interactive), protocol=pickle.HIGHEST_PROTOCOL)
            )
        except (BrokenPipeError, ConnectionResetError, OSError):
            job.ended = JobOutcome(kind="crash", error="worker died before it received its job")
        return job

    @staticmethod
    def _crashed(proc, peak: float) -> JobOutcome:
        proc.join(timeout=5)
        code = proc.exitcode
        if code is not None and code < 0:
            reason = f"worker killed by {signal.Signals(-code).name}"
        else:
            reason = f"worker exited with code {code} without a result"
        return JobOutcome(kind="crash", error=reason, exitcode=code, peak_rss_mb=peak or None)


class JobEnded(Exception):
    """An interactive job ended (returned, raised, crashed or timed out) while the parent
    expected a message from it; `outcome` says how."""

    def __init__(self, outcome: JobOutcome):
        super().__init__(outcome.error or outcome.kind)
        self.outcome = outcome


class JobSession:
    """One running job process, as seen from the parent. Messages the job sends are read with
    the weights-only unpickler (`load_reply`): whatever it sends is untrusted data."""

    def __init__(
        self,
        sandbox: Sandbox,
        proc,
        conn,
        workdir: str,
        lim: Limits,
        start: float,
        pausable: Pausable | None = None,
    ):
        self.sandbox, self.proc, self.conn = sandbox, proc, conn
        self.workdir, self.limits, self.start_time = workdir, lim, start
        self._deadline = start + lim.timeout_s
        self.pausable = pausable
        self.peak_rss_mb = 0.0
        self.ended: JobOutcome | None = None
        self._closed = False

    @property
    def deadline(self) -> float:
        """When the job is out of time: its limit after it started, plus any time it was
        stopped for an exclusive job (`Pausable`)."""
        return self._deadline + (self.pausable.paused_s() if self.pausable is not None else 0.0)

    def send(self, msg: Any) -> None:
        """Send plain data to the job (`Channel.recv` there). A dead job raises JobEnded."""
        if self.ended is not None:
            raise JobEnded(self.ended)
        try:
            self.conn.send_bytes(pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL))
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.ended = self.sandbox._crashed(self.proc, self.peak_rss_mb)
            raise JobEnded(self.ended) from None

    def recv(self, timeout: float | None = None) -> Any:
        """The job's next message (`Channel.send` there). Raises JobEnded when the job returned
        or died instead, or when `timeout` (bounded by the job's own deadline) passed."""
        if self.ended is not None:
            raise JobEnded(self.ended)
        got = self._next(timeout)
        if isinstance(got, JobOutcome):
            self.ended = got
            raise JobEnded(got)
        return got[1]

    def wait_result(self) -> JobOutcome:
        """Wait for the job's return value (messages are not expected: one is a crash)."""
        if self.ended is not None:
            return self.ended
        got = self._next(None)
        if not isinstance(got, JobOutcome):
            got = JobOutcome(
                kind="crash",
                error="the job sent a message where its result was expected",
                peak_rss_mb=self.peak_rss_mb or None,
            )
        self.ended = got
        return got

    def _next(self, timeout: float | None) -> tuple[str, Any] | JobOutcome:
        lim = self.limits
        until = None if timeout is None else time.monotonic() + timeout
        poll_rss = self.sandbox.device == "cuda" and lim.memory_mb is not None
        proc, conn = self.proc, self.conn
        while True:
            # read each time round: a stopped job's deadline moves while it is stopped
            deadline = self.deadline if until is None else min(self.deadline, until)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                waited = lim.timeout_s if deadline == self.deadline else timeout
                return JobOutcome(
                    kind="timeout",
                    error=f"no result after {waited:.0f} s; the job was killed",
                    peak_rss_mb=self.peak_rss_mb or None,
                )
            if conn.poll(min(0.05, max(remaining, 0.001))):
                try:
                    data = conn.recv_bytes()
                except (EOFError, OSError):
                    return self.sandbox._crashed(proc, self.peak_rss_mb)
                try:
                    kind, payload = load_reply(data)
                except Exception as exc:  # noqa: BLE001 - a forged or corrupt reply is a dead job
                    return JobOutcome(
                        kind="crash",
                        error=f"the job's reply could not be read safely ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:200] if str(exc) else ''}); only tensors, "
                        "numbers, strings and containers of them may cross the process boundary",
                        peak_rss_mb=self.peak_rss_mb or None,
                    )
                if kind == "msg":
                    return (kind, payload)
                if kind == "ok":
                    return JobOutcome(
                        kind="ok", value=payload, peak_rss_mb=self.peak_rss_mb or None
                    )
                return JobOutcome(kind="error", error=payload, peak_rss_mb=self.peak_rss_mb or None)
            if not proc.is_alive():
                if conn.poll(0):  # it may have sent just before exiting
                    continue
                return self.sandbox._crashed(proc, self.peak_rss_mb)
            if poll_rss:
                rss = rss_mb(proc.pid)
                self.peak_rss_mb = max(self.peak_rss_mb, rss)
                if rss > lim.memory_mb:
                    return JobOutcome(
                        kind="crash",
                        error=f"memory limit: resident set {rss:.0f} MB > {lim.memory_mb} MB; killed",
                        peak_rss_mb=self.peak_rss_mb,
                        resource=True,
                    )

    def end(
        self, outcome: JobOutcome | None = None, *, triton_cache_out: str | None = None
    ) -> JobOutcome:
        """Kill the job's process group, collect its stderr and remove its directory. Returns
        `outcome` (default: how the job ended, or `crash` if it was still running)."""
        outcome = outcome or self.ended or JobOutcome(kind="crash", error="ended by the parent")
        if self._closed:
            return outcome
        self._closed = True
        proc = self.proc
        _kill_group(proc)
        self.conn.close()
        proc.join(timeout=5)
        if not outcome.stderr_tail:
            outcome.stderr_tail = stderr_tail(os.path.join(self.workdir, "stderr.log"))
        if outcome.kind == "crash" and proc.exitcode is not None and outcome.exitcode is None:
            outcome.exitcode = proc.exitcode
            if proc.exitcode < 0:
                outcome.signal_name = signal.Signals(-proc.exitcode).name
        outcome.duration_s = time.monotonic() - self.start_time
        if triton_cache_out and outcome.kind == "ok":
            copy_cache(os.path.join(self.workdir, "triton_cache"), triton_cache_out)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return outcome


# ---------------------------------------------------------------------------------------------
# Parent-side helpers


def _make_context(start_method: str | None):
    method = start_method or os.environ.get("TA_START_METHOD") or "forkserver"
    try:
        ctx = mp.get_context(method)
    except ValueError:
        log.warning("start method %s unavailable, falling back to spawn", method)
        ctx = mp.get_context("spawn")
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(PRELOAD_MODULES)
    return ctx


_START_LOCK = threading.Lock()


_FORKSERVER_MODE: dict[str, bool | None] = {"interpret": None}


def _start_without_main(proc, *, interpret: bool) -> None:
    """Start `proc` without re-importing the caller's `__main__` in the child.

    multiprocessing's spawn/forkserver children normally re-run the parent's main module, which
    breaks scripts without an `if __name__ == "__main__"` guard, the REPL and host applications.
    Job functions live in importable modules, so the child never needs `__main__`.

    Triton decides at *import* time whether its standard library (`tl.max`, ...) is interpreted,
    so the forkserver that preloads triton must start with TRITON_INTERPRET matching the device;
    a forkserver started for the other mode is stopped and restarted.
    """
    from multiprocessing import forkserver, spawn

    with _START_LOCK:
        uses_forkserver = (
            proc._start_method == "forkserver" if hasattr(proc, "_start_method") else True
        )
        if uses_forkserver and _FORKSERVER_MODE["interpret"] not in (None, interpret):
            stop = getattr(forkserver._forkserver, "_stop", None)
            if stop is not None:
                # The old forkserver's jobs die with it (PR_SET_PDEATHSIG): let them finish.
                _wait_for_children(getattr(forkserver._forkserver, "_forkserver_pid", None))
                stop()
        if uses_forkserver:
            _FORKSERVER_MODE["interpret"] = interpret
        saved_env = os.environ.get("TRITON_INTERPRET")
        if interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        else:
            os.environ.pop("TRITON_INTERPRET", None)
        original = spawn.get_preparation_data

        def prep(name):
            data = original(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        spawn.get_preparation_data = prep
        try:
            proc.start()
        finally:
            spawn.get_preparation_data = original
            if saved_env is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = saved_env


def _wait_for_children(pid: int | None) -> None:
    """Wait until process `pid` has no children (Linux /proc; elsewhere at once)."""
    while pid is not None and _children(pid):
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        if not os.path.exists(f"/proc/{pid}"):
            return []
    found = []  # kernels without CONFIG_PROC_CHILDREN: every process's parent
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            if int(data[data.rindex(b")") + 2 :].split()[1]) == pid:
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    return found


def _kill_group(proc) -> None:
    if proc.pid is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.is_alive():
        try:
            proc.kill()
        except Exception:
            pass
