"""A job's resource limits (`Limits`) and how they are enforced: rlimits set in the job's own
process (`apply_rlimits`: file size, no core dumps, address space on the CPU) and, on CUDA, its
resident set polled by the parent (`rss_mb`). `DEFAULT_TIMEOUT_S` and `HOST_FLOOR_MB` are the
one default timeout and host memory of a job (the verification options, and through them the
option table, read them)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TIMEOUT_S = 180.0
"""Seconds a candidate's job may run (compile included) before it is killed."""

HOST_FLOOR_MB = 8192
"""Host memory limit of a job for problems up to a few hundred MB: torch, Triton and a CUDA
context alone take 2-3 GB of address space."""


@dataclass(kw_only=True)
class Limits:
    """Per-job resource limits."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int | None = HOST_FLOOR_MB
    """Address space (CPU) or resident set (CUDA) cap; None for no cap."""
    file_size_mb: int = 256
    network: bool = False
    guard: bool = True
    """Install the audit-hook guard (socket / subprocess / write restrictions)."""


def _status_mb(pid: int | str, field: str) -> float:
    """A size from /proc/<pid>/status (`VmRSS`, `VmSize`, ...) in MB; 0 where it cannot say."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS")


def vm_size_mb(pid: int | str = "self") -> float:
    """The address space a process has mapped (VmSize), in MB."""
    return _status_mb(pid, "VmSize")


def apply_rlimits(lim: Limits, device: str) -> None:
    """Set the job's own rlimits. On the CPU the address-space cap is `memory_mb` on top of what
    the job has already mapped when it starts (the forkserver's torch and Triton): a CUDA build
    of torch maps several GB of address space at import without using it, and an absolute cap
    made every CPU job on a GPU machine fail with MemoryError (H200, session 15)."""
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
        setlim(resource.RLIMIT_AS, int((vm_size_mb() + lim.memory_mb) * 1024 * 1024))
