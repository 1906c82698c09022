"""tools/draft/ptxas_limit.py: a CUDA draft job points Triton at a ptxas wrapper with a time
limit (CPU time, and a wall-clock backstop). Here with a stand-in ptxas (no GPU needed): the wrapper passes arguments and the exit
status through, answers `--version` as Triton asks it, and stops a ptxas that computes or
waits past its limit with a failing status, which Triton turns into a PTXASError."""

from __future__ import annotations

import json
import os
import subprocess
import time

from tests.helpers import run_json_script

FAKE = """#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "ptxas: NVIDIA (R) Ptx optimizing assembler"
  echo "Cuda compilation tools, release 12.8, V12.8.93"
  exit 0
fi
if [ "$1" = "hang" ]; then sleep 60; fi
if [ "$1" = "spin" ]; then while :; do :; done; fi
echo "args: $*"
exit 3
"""

SCRIPT = r"""
import json, os, sys
from tools.draft.ptxas_limit import limit_ptxas
wrapped = limit_ptxas(sys.argv[1], seconds=1)
from triton.backends.nvidia.compiler import get_ptxas
json.dump({"wrapped": wrapped, "env": {k: os.environ.get(k) for k in wrapped},
           "sm90": get_ptxas(90).path, "sm80": get_ptxas(80).path,
           "version": get_ptxas(90).version}, open(sys.argv[2], "w"))
"""


def test_triton_runs_ptxas_through_a_wrapper_with_a_time_limit(tmp_path):
    fake = tmp_path / "fake-ptxas"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out.json"
    ptxas = {"TRITON_PTXAS_PATH": str(fake), "TRITON_PTXAS_BLACKWELL_PATH": str(fake)}
    got = run_json_script(SCRIPT, out, work, out, interpret=False, env=ptxas, timeout=120)
    assert got["wrapped"] == {
        "TRITON_PTXAS_PATH": str(fake),
        "TRITON_PTXAS_BLACKWELL_PATH": str(fake),
    }
    wrappers = set(got["env"].values())
    assert all(w.startswith(str(work)) for w in wrappers)
    assert {got["sm90"], got["sm80"]} <= wrappers  # what Triton runs, old and new targets
    assert got["version"] == "12.8"

    wrapper = got["env"]["TRITON_PTXAS_PATH"]
    ran = subprocess.run([wrapper, "-v", "a b"], capture_output=True, text=True, timeout=30)
    assert ran.returncode == 3 and ran.stdout.strip() == "args: -v a b"
    # a ptxas that computes: its CPU time runs out (SIGXCPU, or the SIGKILL at the hard limit);
    # on a loaded machine the CPU second takes longer than the wall-clock backstop (4 s) to
    # accrue, and the backstop ends it first (124; seen in a suite at load average 17)
    start = time.monotonic()
    spun = subprocess.run([wrapper, "spin"], capture_output=True, text=True, timeout=30)
    assert spun.returncode != 0 and time.monotonic() - start < 15
    # a ptxas that waits: the wall-clock backstop (4 x the limit)
    start = time.monotonic()
    hung = subprocess.run([wrapper, "hang"], capture_output=True, text=True, timeout=30)
    assert hung.returncode == 124 and 3.5 < time.monotonic() - start < 15


def test_a_missing_ptxas_is_left_alone(tmp_path, monkeypatch):
    from tools.draft import ptxas_limit

    monkeypatch.setattr(ptxas_limit, "real_ptxas", lambda key, binary: None)
    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    assert ptxas_limit.limit_ptxas(str(tmp_path)) == {}
    assert "TRITON_PTXAS_PATH" not in os.environ
    assert json.dumps(os.listdir(tmp_path)) == "[]"
