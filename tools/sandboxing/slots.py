"""Where jobs run: the slots of the CPU or of each visible GPU (`Slot`, `SlotPool`: shared jobs
share a GPU, an exclusive timing job has it alone), which GPU a job sees
(`visible_device_id`), and how much memory a GPU has for shared jobs (`gpu_memory_mb`)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tools.core.errors import SandboxError
from tools.sandboxing.work_clock import write_ledger


@dataclass
class Slot:
    device: str
    """`cpu` or `cuda:N` (N indexes the GPUs this process sees; the job sees it as cuda:0)."""


class Pausable:
    """A running job that an exclusive job may stop (SIGSTOP to its process group) instead of
    waiting for it to end, and continue (SIGCONT) once the exclusive job is done: a draft job,
    which holds its slot for minutes (Inductor, ptxas, draft-time variants) while its GPU work is
    seconds of it. On the H200 (session 10) a timing job waited for such drafts, and while it
    waited no other job started: level-2 convolution problems took 210-390 s each, of which their
    own jobs worked 20-60 s.

    A stopped job launches nothing; what it had queued on the GPU drains while the exclusive job
    starts (a fresh process that imports torch and builds the problem before it times anything).
    `paused_s()` is how long it has been stopped, so its deadline can be moved by that much;
    with a `ledger`, the job is told too (`tools.sandboxing.work_clock`: written before each
    SIGCONT), so that its own clocks count working time only."""

    def __init__(self, ledger: str | None = None) -> None:
        self._lock = threading.Lock()
        self.pid: int | None = None
        self._since: float | None = None
        self._total = 0.0
        self.ledger = ledger
        """The job's ledger file (`tools.sandboxing.work_clock.LEDGER_ENV`), or None."""

    def attach(self, pid: int) -> None:
        """The job's process (the leader of its process group once it runs)."""
        with self._lock:
            self.pid = pid
            if self._since is not None:  # stopped before it ran: counted from its start
                self._since = time.monotonic()
                self._signal(signal.SIGSTOP)

    def pause(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()
                self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        with self._lock:
            if self._since is not None:
                self._total += time.monotonic() - self._since
                self._since = None
                if self.ledger:  # before SIGCONT: the job's first look sees the new total
                    write_ledger(self.ledger, self._total)
                self._signal(signal.SIGCONT)

    @property
    def paused(self) -> bool:
        return self._since is not None

    def paused_s(self) -> float:
        with self._lock:
            now = time.monotonic()
            return self._total + (now - self._since if self._since is not None else 0.0)

    def _signal(self, sig: int) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, sig)  # the job and what it started (ptxas, compile workers)
        except (ProcessLookupError, PermissionError):
            try:  # not yet its own session leader (setsid comes first thing in the job)
                os.kill(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


PAUSED_SHARE = 0.5
"""An exclusive job that does not say how much device memory it needs stops running pausable
jobs only while their reservations leave this part of the device free; else it waits for them."""


class SlotPool:
    """Hands out slots to jobs. A shared job takes one free slot; an exclusive job (a timing job)
    takes every slot of one device, so nothing else runs on that GPU while it runs (DESIGN.md:
    timings never overlap on one GPU). Several slots may name one device (`gpus=[0, 0, 0, 0]`:
    four verification jobs at once on GPU 0). While an exclusive job waits, no shared job starts,
    so a stream of verifications cannot starve a timing, except a pausable one whose memory
    stays within what an exclusive job runs beside (`PAUSED_SHARE`): it is stopped when the
    exclusive job starts, so it cannot delay it. On the H200 (session 19, KernelBench level 3)
    from 305 s of a 500 s bench only 2-4 of its 8 slots ran a job, while networks' verifications
    took 30-200 s: the likely cause, a timing job waiting for one of them held back every draft.

    A shared job may be `pausable` (`Pausable`): an exclusive job does not wait for it, it stops
    it for its own run and continues it afterwards (its slot stays taken meanwhile)."""

    def __init__(self, devices: Sequence[str], capacity_mb: dict[str, float] | None = None) -> None:
        self.devices = list(devices)
        self._busy = [False] * len(self.devices)
        self._cond = threading.Condition()
        self._exclusive_waiting = 0
        self.capacity_mb = dict(capacity_mb or {})
        """Device memory a device's shared jobs may reserve together (absent: no accounting)."""
        self._reserved: dict[int, float] = {}
        self._pausable: dict[int, Pausable] = {}
        self._paused: dict[str, list[int]] = {}
        """Per device held by an exclusive job: the slots of the pausable jobs it stopped."""

    def acquire(
        self,
        exclusive: bool = False,
        mem_mb: float | None = None,
        pausable: Pausable | None = None,
    ) -> list[int]:
        """Slots for one job. `mem_mb`: the device memory it is expected to need; a shared job
        waits until that fits beside the others' reservations on one device, and a job that
        could never fit beside anything (more than the device holds) runs exclusive.
        `pausable`: a shared job an exclusive one may stop rather than wait for."""
        if mem_mb is not None and self.capacity_mb:
            if mem_mb > min(self.capacity_mb.values(), default=float("inf")):
                exclusive = True
        with self._cond:
            if exclusive:
                self._exclusive_waiting += 1
            try:
                while True:
                    got = self._try(exclusive, mem_mb, pausable is not None)
                    if got:
                        if mem_mb is not None and not exclusive:
                            self._reserved[got[0]] = mem_mb
                        if pausable is not None and not exclusive:
                            self._pausable[got[0]] = pausable
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

    def _try(
        self, exclusive: bool, mem_mb: float | None = None, pausable: bool = False
    ) -> list[int]:
        if exclusive:
            # a free device first; else one where only pausable jobs run (they are stopped)
            devices = list(dict.fromkeys(self.devices))
            devices.sort(
                key=lambda dev: any(self._busy[i] for i, d in enumerate(self.devices) if d == dev)
            )
            for dev in devices:
                idx = [i for i, d in enumerate(self.devices) if d == dev]
                busy = [i for i in idx if self._busy[i]]
                if any(i not in self._pausable for i in busy) or dev in self._paused:
                    continue
                if busy and not self._room_beside(dev, busy, mem_mb):
                    continue
                for i in idx:
                    self._busy[i] = True
                for i in busy:
                    self._pausable[i].pause()
                if busy:
                    self._paused[dev] = busy
                taken = Taken(idx)
                taken.exclusive = True
                return taken
            return []
        if self._exclusive_waiting and not pausable:
            return []
        for i, busy in enumerate(self._busy):
            if busy or not self._fits(i, mem_mb):
                continue
            if self._exclusive_waiting and not self._stays_beside(i, mem_mb):
                continue
            self._busy[i] = True
            return Taken([i])
        return []

    def _stays_beside(self, i: int, mem_mb: float | None) -> bool:
        """Whether a pausable job may start in slot `i` while an exclusive job waits: the
        pausable jobs of its device, it included, hold no more memory than an exclusive job
        runs beside (`_room_beside`'s share), so it adds no wait to the exclusive job."""
        dev = self.devices[i]
        cap = self.capacity_mb.get(dev)
        if cap is None:
            return True
        held = sum(self._reserved.get(j, 0.0) for j in self._pausable if self.devices[j] == dev)
        return held + (mem_mb or 0.0) <= cap * PAUSED_SHARE

    def _room_beside(self, dev: str, paused: list[int], mem_mb: float | None) -> bool:
        cap = self.capacity_mb.get(dev)
        if cap is None:
            return True
        held = sum(self._reserved.get(i, 0.0) for i in paused)
        return held + mem_mb <= cap if mem_mb is not None else held <= cap * PAUSED_SHARE

    def release(self, idx: list[int]) -> None:
        with self._cond:
            if isinstance(idx, Taken) and idx.exclusive:
                # continue what the exclusive job stopped; their slots stay theirs
                dev = self.devices[idx[0]]
                stopped = self._paused.pop(dev, [])
                for i in stopped:
                    self._pausable[i].resume()
                idx = [i for i in idx if i not in stopped]
            for i in idx:
                stopped = self._paused.get(self.devices[i], [])
                if i in stopped:
                    # a stopped job ended (killed) while the exclusive job runs: its slot stays
                    # taken until the exclusive job gives the device back
                    stopped.remove(i)
                else:
                    self._busy[i] = False
                self._reserved.pop(i, None)
                self._pausable.pop(i, None)
            self._cond.notify_all()


class Taken(list):
    """The slots `SlotPool.acquire` gave (a list of indices), and whether as an exclusive job."""

    exclusive = False


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


def count_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
