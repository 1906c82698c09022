"""Where jobs run: the slots of the CPU or of each visible GPU (`Slot`, `SlotPool`: shared jobs
share a GPU, an exclusive timing job has it alone), which GPU a job sees
(`visible_device_id`), and how much memory a GPU has for shared jobs (`gpu_memory_mb`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from tools.errors import SandboxError


@dataclass
class Slot:
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
