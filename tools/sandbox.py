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
  cap (`RLIMIT_AS`); on CUDA (whose driver reserves huge address ranges) the parent polls the
  resident set size instead and kills the job past the limit;
- has no network: a private network namespace where the OS allows it (root), and in every case a
  Python audit hook that refuses sockets, non-toolchain subprocesses and file writes outside the
  job directory (`tools.guard`);
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
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from tools.errors import SandboxError

log = logging.getLogger(__name__)

PRELOAD_MODULES = ["tools._preload"]

OutcomeKind = Literal["ok", "error", "crash", "timeout"]


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


@dataclass(kw_only=True)
class Limits:
    """Per-job resource limits."""

    timeout_s: float = 180.0
    memory_mb: int | None = 8192
    """Address space (CPU) or resident set (CUDA) cap; None for no cap."""
    file_size_mb: int = 256
    network: bool = False
    guard: bool = True
    """Install the audit-hook guard (socket / subprocess / write restrictions)."""


@dataclass
class _Slot:
    device: str
    """`cpu` or `cuda:N` (N indexes the GPUs this process sees; the job sees it as cuda:0)."""


class SlotPool:
    """Hands out slots to jobs. A shared job takes one free slot; an exclusive job (a timing job)
    takes every slot of one device, so nothing else runs on that GPU while it runs (DESIGN.md:
    timings never overlap on one GPU). Several slots may name one device (`gpus=[0, 0, 0, 0]`:
    four verification jobs at once on GPU 0). While an exclusive job waits, no shared job starts,
    so a stream of verifications cannot starve a timing."""

    def __init__(self, devices: Sequence[str], capacity_mb: dict[str, float] | None = None) -> None:
        self.devices = list(devices)
        self._busy = [False] * len(self.devices)
        self._cond = threading.Condition()
        self._exclusive_waiting = 0
        self.capacity_mb = dict(capacity_mb or {})
        """Device memory a device's shared jobs may reserve together (absent: no accounting)."""
        self._reserved: dict[int, float] = {}

    def acquire(self, exclusive: bool = False, mem_mb: float | None = None) -> list[int]:
        """Slots for one job. `mem_mb`: the device memory it is expected to need; a shared job
        waits until that fits beside the others' reservations on one device, and a job that
        could never fit beside anything (more than the device holds) runs exclusive."""
        if mem_mb is not None and self.capacity_mb:
            if mem_mb > min(self.capacity_mb.values(), default=float("inf")):
                exclusive = True
        with self._cond:
            if exclusive:
                self._exclusive_waiting += 1
            try:
                while True:
                    got = self._try(exclusive, mem_mb)
                    if got:
                        if mem_mb is not None and not exclusive:
                            self._reserved[got[0]] = mem_mb
                        return got
                    self._cond.wait()
            finally:
                if exclusive:
                    self._exclusive_waiting -= 1

    def _fits(self, i: int, mem_mb: float | None) -> bool:
        cap = self.capacity_mb.get(self.devices[i])
        if mem_mb is None or cap is None:
            return True
        used = sum(m for j, m in self._reserved.items() if self.devices[j] == self.devices[i])
        return used + mem_mb <= cap

    def _try(self, exclusive: bool, mem_mb: float | None = None) -> list[int]:
        if exclusive:
            for dev in dict.fromkeys(self.devices):
                idx = [i for i, d in enumerate(self.devices) if d == dev]
                if not any(self._busy[i] for i in idx):
                    for i in idx:
                        self._busy[i] = True
                    return idx
            return []
        if self._exclusive_waiting:
            return []
        for i, busy in enumerate(self._busy):
            if not busy and self._fits(i, mem_mb):
                self._busy[i] = True
                return [i]
        return []

    def release(self, idx: list[int]) -> None:
        with self._cond:
            for i in idx:
                self._busy[i] = False
                self._reserved.pop(i, None)
            self._cond.notify_all()


class Sandbox:
    """Runs job functions in isolated worker processes.

    `device` is `cpu` (Triton interpreter) or `cuda`. On CUDA there are `slots_per_gpu` slots per
    visible GPU (or per entry of `gpus`, which may repeat a GPU): that many shared jobs run at once
    on one GPU, and an exclusive job still takes all of them; on CPU `max_workers` slots (default:
    the number of cores) and `slots_per_gpu` is unused.
    Thread-safe: call `run` from several threads to evaluate candidates in parallel.
    """

    def __init__(
        self,
        *,
        device: str = "cpu",
        max_workers: int | None = None,
        gpus: Sequence[int] | None = None,
        limits: Limits | None = None,
        start_method: str | None = None,
        interpret: bool | None = None,
        slots_per_gpu: int = 1,
    ) -> None:
        if device not in ("cpu", "cuda"):
            raise SandboxError(f"unknown sandbox device {device!r} (use cpu or cuda)")
        if isinstance(slots_per_gpu, bool) or not isinstance(slots_per_gpu, int):
            raise SandboxError(f"slots_per_gpu must be an integer, got {slots_per_gpu!r}")
        if slots_per_gpu < 1:
            raise SandboxError(f"slots_per_gpu must be at least 1, got {slots_per_gpu}")
        self.device = device
        self.slots_per_gpu = slots_per_gpu if device == "cuda" else 1
        """Shared jobs at once on one GPU (1 on the CPU)."""
        self.interpret = (device == "cpu") if interpret is None else interpret
        """Run kernels under the Triton interpreter (CPU). False for trusted jobs that need real
        Triton objects on a CPU machine, e.g. Inductor drafting; use with start_method="spawn"."""
        self.limits = limits or Limits()
        if device == "cuda":
            ids = list(gpus) if gpus is not None else list(range(_count_gpus()))
            if not ids:
                raise SandboxError("device cuda requested but no GPU is visible")
            for i in ids:
                visible_device_id(i)  # a GPU the parent cannot see is an error now, not per job
            # Slots of one GPU share its device string: SlotPool gives an exclusive job all of them.
            self._slots = [_Slot(f"cuda:{i}") for i in ids for _ in range(slots_per_gpu)]
            capacity = {f"cuda:{i}": gpu_memory_mb(i) * GPU_SHARE for i in ids}
        else:
            n = max_workers or os.cpu_count() or 1
            self._slots = [_Slot("cpu") for _ in range(n)]
            capacity = {}
        self._pool = SlotPool([s.device for s in self._slots], capacity_mb=capacity)
        self._ctx = _make_context(start_method)
        self.jobs_run = 0

    @property
    def slots(self) -> int:
        return len(self._slots)

    def run(
        self,
        fn: str,
        *args: Any,
        timeout: float | None = None,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        exclusive: bool = False,
        triton_cache_in: str | None = None,
        triton_cache_out: str | None = None,
        gpu_mb: float | None = None,
        **kwargs: Any,
    ) -> JobOutcome:
        """Run `fn` ("module:function") with args in a fresh worker; never raises for job faults.
        `exclusive`: no other job runs on the job's device meanwhile (timing).
        `gpu_mb`: device memory the job is expected to need (admission beside other jobs).
        `triton_cache_out`: after the job, copy its private Triton cache there;
        `triton_cache_in`: start the job's private cache as a copy of that directory. Only for
        jobs of the same candidate source (its verification, then its timing): the timing job
        then does not compile again, and no candidate ever sees another candidate's cache."""
        lim = limits or self.limits
        if timeout is not None:
            lim = Limits(**{**lim.__dict__, "timeout_s": timeout})
        with self.slot(exclusive=exclusive, gpu_mb=gpu_mb) as slot:
            job = self.start(
                slot,
                fn,
                *args,
                limits=lim,
                env=env,
                triton_cache_in=triton_cache_in,
                _interactive=False,
                **kwargs,
            )
            outcome = job.wait_result()
            return job.end(outcome, triton_cache_out=triton_cache_out)

    @contextmanager
    def slot(self, *, exclusive: bool = False, gpu_mb: float | None = None) -> Iterator[_Slot]:
        """Hold one slot (all of a device's slots when `exclusive`) for the jobs started in it:
        jobs that must talk to each other on one GPU (a verification's judge and candidate)."""
        taken = self._pool.acquire(exclusive, gpu_mb if self.device == "cuda" else None)
        try:
            yield self._slots[taken[0]]
        finally:
            self._pool.release(taken)

    def start(
        self,
        slot: _Slot,
        fn: str,
        *args: Any,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        triton_cache_in: str | None = None,
        _interactive: bool = True,
        **kwargs: Any,
    ) -> JobSession:
        """Start `fn` in a fresh worker on `slot` and return at once. An interactive job (the
        default) is called as `fn(channel, *args, **kwargs)` and talks with the parent through
        `JobSession.send` / `recv` until it returns. End every session with `end()`."""
        lim = limits or self.limits
        workdir = tempfile.mkdtemp(prefix="ta-job-")
        if triton_cache_in:
            _copy_cache(triton_cache_in, os.path.join(workdir, "triton_cache"), rebase=True)
        job_env = dict(env or {})
        if slot.device.startswith("cuda:"):
            job_env["CUDA_VISIBLE_DEVICES"] = visible_device_id(int(slot.device.split(":", 1)[1]))
            job_env["TA_DEVICE"] = "cuda"
        else:
            job_env["TA_DEVICE"] = "cpu"
            if self.interpret:
                job_env["TRITON_INTERPRET"] = "1"
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=_child_main, args=(child_conn, workdir, job_env, lim, slot.device), daemon=True
        )
        start = time.monotonic()
        try:
            _start_without_main(proc, interpret=self.interpret)
        except Exception as exc:  # the machinery itself failed
            shutil.rmtree(workdir, ignore_errors=True)
            raise SandboxError(f"could not start a worker process: {exc}") from exc
        child_conn.close()
        self.jobs_run += 1
        job = JobSession(self, proc, parent_conn, workdir, lim, start)
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

    def close(self) -> None:
        """Nothing persistent to close today (fresh process per job); kept for API symmetry."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JobEnded(Exception):
    """An interactive job ended (returned, raised, crashed or timed out) while the parent
    expected a message from it; `outcome` says how."""

    def __init__(self, outcome: JobOutcome):
        super().__init__(outcome.error or outcome.kind)
        self.outcome = outcome


class JobSession:
    """One running job process, as seen from the parent. Messages the job sends are read with
    the weights-only unpickler (`_load_reply`): whatever it sends is untrusted data."""

    def __init__(self, sandbox: Sandbox, proc, conn, workdir: str, lim: Limits, start: float):
        self.sandbox, self.proc, self.conn = sandbox, proc, conn
        self.workdir, self.limits, self.start_time = workdir, lim, start
        self.deadline = start + lim.timeout_s
        self.peak_rss_mb = 0.0
        self.ended: JobOutcome | None = None
        self._closed = False

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
        deadline = (
            self.deadline if timeout is None else min(self.deadline, time.monotonic() + timeout)
        )
        poll_rss = self.sandbox.device == "cuda" and lim.memory_mb is not None
        proc, conn = self.proc, self.conn
        while True:
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
                    kind, payload = _load_reply(data)
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
                rss = _rss_mb(proc.pid)
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
            outcome.stderr_tail = _tail(os.path.join(self.workdir, "stderr.log"))
        if outcome.kind == "crash" and proc.exitcode is not None and outcome.exitcode is None:
            outcome.exitcode = proc.exitcode
            if proc.exitcode < 0:
                outcome.signal_name = signal.Signals(-proc.exitcode).name
        outcome.duration_s = time.monotonic() - self.start_time
        if triton_cache_out and outcome.kind == "ok":
            _copy_cache(os.path.join(self.workdir, "triton_cache"), triton_cache_out)
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


def visible_device_id(index: int, parent_visible: str | None = None) -> str:
    """What a job's CUDA_VISIBLE_DEVICES must say for the `index`-th GPU this process sees.

    Indices (`gpus`, `torch.cuda.device_count()`) count the GPUs visible to *this* process; when
    it already runs under CUDA_VISIBLE_DEVICES (a scheduler, a container, a user's choice), GPU
    `index` is that list's entry `index` (an id or a UUID), not physical GPU `index`.
    """
    if parent_visible is None:
        parent_visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if parent_visible is None:
        return str(index)
    ids = [x.strip() for x in parent_visible.split(",") if x.strip()]
    if not 0 <= index < len(ids):
        raise SandboxError(
            f"GPU index {index} is not visible: CUDA_VISIBLE_DEVICES={parent_visible!r} lists "
            f"{len(ids)} GPU(s)"
        )
    return ids[index]


GPU_SHARE = 0.9
"""The part of a GPU's memory that jobs sharing it may reserve together (the rest: CUDA
contexts and allocator slack)."""


def gpu_memory_mb(index: int) -> float:
    """Total memory of the `index`-th visible GPU in MiB, read without creating a CUDA context
    in this process (nvidia-smi); torch's device properties as the fallback."""
    import subprocess

    try:
        out = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=memory.total",
                "--format=csv,noheader,nounits",
                "-i",
                visible_device_id(index),
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.split()
        return float(out[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        pass
    try:
        import torch

        return torch.cuda.get_device_properties(index).total_memory / 2**20
    except Exception:  # noqa: BLE001 - no figure: no accounting for this GPU
        return float("inf")


def _count_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


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


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _tail(path: str, lines: int = 25, chars: int = 3000) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    # The harness's own profiler (kineto) logs start/stop lines; they are not the candidate's.
    kept = [ln for ln in text.rstrip().splitlines() if not ln.startswith(_HARNESS_NOISE)]
    return "\n".join(kept[-lines:])[-chars:]


_HARNESS_NOISE = ("USDT:", "STAGE:")


def _copy_cache(src: str, dst: str, rebase: bool = False) -> None:
    """A carried cache only saves compile time: failing to copy it is never a job's failure.
    `rebase`: the copy is a job's Triton cache (see `_rebase_triton_groups`)."""
    try:
        copy_regular_files(src, dst)
        if rebase:
            _rebase_triton_groups(dst)
    except OSError:
        pass


def _rebase_triton_groups(cache_dir: str) -> None:
    """Point Triton's group indexes (`<key>/__grp__<name>.json`, which name a compiled kernel's
    files by absolute path) at this copy: they still name the first job's directory, which is
    gone, and Triton would compile again. Only file names are kept, so no entry can point
    outside its own folder; an index whose files did not all arrive (the copy's byte limit, an
    unreadable file) is deleted, so Triton recompiles rather than load half a kernel."""
    import glob
    import json

    for index in glob.glob(os.path.join(cache_dir, "*", "__grp__*")):
        folder = os.path.dirname(index)
        try:
            with open(index) as f:
                data = json.load(f)
            paths = {
                name: os.path.join(folder, os.path.basename(str(old)))
                for name, old in data["child_paths"].items()
            }
            if not all(os.path.isfile(p) for p in paths.values()):
                raise ValueError("incomplete group")
            data["child_paths"] = paths
            with open(index, "w") as f:
                json.dump(data, f)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            try:
                os.unlink(index)
            except OSError:
                pass


def copy_regular_files(src: str, dst: str, max_bytes: int = 512 << 20) -> int:
    """Copy the regular files under `src` into `dst` (same relative paths); symlinks, devices
    and FIFOs are skipped, never followed, and copying stops at `max_bytes`. The source was
    written by an untrusted job, so nothing in it may make the parent read outside it.
    Returns the bytes copied."""
    import stat

    copied = 0
    for root, dirs, files in os.walk(src, followlinks=False):
        rel = os.path.relpath(root, src)
        out_dir = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(out_dir, exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or copied + st.st_size > max_bytes:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue
            with os.fdopen(fd, "rb") as f, open(os.path.join(out_dir, name), "wb") as g:
                shutil.copyfileobj(f, g)
            copied += st.st_size
    return copied


# ---------------------------------------------------------------------------------------------
# Child side


def _child_main(conn, workdir: str, env: dict[str, str], lim: Limits, device: str) -> None:
    """Entry point of a job process. Never returns: ends with os._exit."""
    import sys

    try:
        os.setsid()
    except OSError:
        pass
    _die_with_parent()
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
    _apply_rlimits(lim, device)
    try:
        fn_ref, args, kwargs, interactive = pickle.loads(conn.recv_bytes())
        from tools import guard

        if not lim.network:
            guard.isolate_network()
        if lim.guard:
            guard.install(workdir)
        func = _resolve(fn_ref)
        if interactive:
            args = (Channel(conn), *args)
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


class Channel:
    """The job's side of an interactive session: `recv()` the parent's next message (plain
    data), `send()` plain data back (tensors, numbers, strings, bytes, containers)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def recv(self) -> Any:
        return pickle.loads(self._conn.recv_bytes())

    def send(self, msg: Any) -> None:
        self._conn.send_bytes(_dump_reply(("msg", msg)))


def _die_with_parent() -> None:
    """Linux: SIGKILL this job when the process that started it (the forkserver, which exits
    with the agent) dies. A job leads its own session, so a killed agent's jobs would otherwise
    run on: seen here, an interpreted 1 GiB job and its ptxas outlived their agent by minutes."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):
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


def _load_reply(data: bytes) -> tuple[str, Any]:
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


def _apply_rlimits(lim: Limits, device: str) -> None:
    import resource

    def setlim(which: int, value: int) -> None:
        try:
            soft, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, hard))
        except (ValueError, OSError):
            pass

    setlim(resource.RLIMIT_CORE, 0)
    setlim(resource.RLIMIT_FSIZE, lim.file_size_mb * 1024 * 1024)
    if device == "cpu" and lim.memory_mb is not None:
        setlim(resource.RLIMIT_AS, lim.memory_mb * 1024 * 1024)


def _resolve(ref: str):
    import importlib

    module, _, name = ref.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
