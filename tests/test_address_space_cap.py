"""The CPU job's address-space cap counts what the job allocates, not what its process already
maps: a CUDA build of torch reserves GB of address space at import (session 15 on the H200:
every `device="cpu"` job there failed with MemoryError under an absolute cap)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import mmap, sys
    from tools.sandboxing.limits import Limits, apply_rlimits
    # what a CUDA torch does at import: a large reservation, never touched
    reserved = mmap.mmap(-1, 3 * 1024 ** 3, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0), prot=mmap.PROT_READ)
    apply_rlimits(Limits(memory_mb=512), "cpu")
    small = bytearray(256 * 1024 ** 2)  # within the job's 512 MB
    print("small ok", flush=True)
    try:
        big = bytearray(1024 * 1024 ** 2)  # over it
    except MemoryError:
        print("big refused", flush=True)
        sys.exit(0)
    print("big allowed", flush=True)
    """
)


def test_the_cap_is_on_top_of_what_the_process_already_maps():
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[:2] == ["small ok", "big refused"], r.stdout + r.stderr[-2000:]
