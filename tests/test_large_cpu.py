"""Real-size verification on the CPU: a correct kernel for a problem with one 1 GiB fp32 input is
verified with no process of the verifier's tree above 5 GiB resident, in under 5 minutes.

One trial (two candidate runs): the Triton interpreter itself takes about 0.2 us an element, so
each run of this 2**28-element ReLU costs about a minute on 2 cores; five trials would take ten.
Memory does not grow with trials (trials run one after another and are freed), which the
per-trial figures in docs/verification.md show. Before the judge/handover design, the reference job pickled every trial's inputs and
outputs through a pipe and the comparison made float64 copies: this ended in the generic error
object ("DefaultCPUAllocator: can't allocate memory").

Slow (about a minute on 2 cores), and CI runs it: memory proportional to the problem is the
product's promise at the sizes its users measure with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LARGE = ROOT / "tests" / "fixtures" / "large"
GIB = 1 << 30


def _tree(pid: int) -> list[int]:
    """`pid` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_one_gib_input_verifies_in_bounded_memory(tmp_path):
    env = {**os.environ, "TRITON_AGENT_CACHE": str(tmp_path / "cache")}
    start = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent",
            "verify",
            str(LARGE / "relu_1gib.py"),
            str(LARGE / "relu_1gib_kernel.py"),
            "--json",
            "--allow-large",
            "--device",
            "cpu",
            "--trials",
            "1",
            "--timeout",
            "280",
            # The ahead-of-time compile for sm_90 would compile the CPU-sized block (2**20
            # elements a program) with ptxas: minutes, and nothing to do with memory.
            "--target",
            "none",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak: dict[int, int] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for p in _tree(proc.pid):
                peak[p] = max(peak.get(p, 0), _rss_bytes(p))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        done.set()
        watcher.join()
        if proc.poll() is None:
            proc.kill()
    elapsed = time.monotonic() - start
    verdict = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == 0, (verdict.get("status"), verdict.get("message"), err[-2000:])
    assert verdict["status"] == "ok" and verdict["trials"] == 1, verdict["message"]
    # The job directories' handover files went with their jobs.
    assert verdict["evidence"]["footprint"]["input_bytes"] == GIB
    assert verdict["evidence"]["footprint"]["output_bytes"] == GIB
    biggest = max(peak.values())
    assert len(peak) >= 3, "the watcher must have seen the judge's and the candidate's jobs"
    assert biggest < 5 * GIB, f"a process of the tree reached {biggest / GIB:.2f} GiB resident"
    # Each job holds a few copies of the problem's tensors, not one per trial.
    assert verdict["evidence"]["memory"]["host_peak_mb"] < 5 * 1024
    assert elapsed < 300
