"""CUDA-only code paths exercised on the CPU by faking the GPU condition (no GPU needed).

Each test reproduces a way the H200 run went (or would have gone) wrong: a GPU index that
ignores the parent's CUDA_VISIBLE_DEVICES, the `torch.compile` baseline refused by the guard on
a many-core machine, an honest lazy import during the first GPU forward read as tampering.
Jobs run in spawn-started sandboxes (no forkserver preloads), so the child starts as bare as a
GPU job: nothing the CPU shim or preload would import is there unless the code under test
imports it.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.helpers import ROOT
from tools.core.errors import SandboxError
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import Sandbox
from tools.sandboxing.slots import visible_device_id


def _run_source(sb: Sandbox, source: str, timeout: float = 120.0):
    """Run `source` in a job; the job's answer is whatever it binds to `result`."""
    expr = f"(lambda g: (exec({source!r}, g), g.get('result'))[1])({{}})"
    out = sb.run("builtins:eval", expr, timeout=timeout)
    assert out.kind == "ok", out.error + out.stderr_tail
    return out.value


# --- multi-GPU slots when the parent already has CUDA_VISIBLE_DEVICES --------------------------


def test_visible_device_id_maps_to_the_parents_list():
    assert visible_device_id(0, None) == "0"
    assert visible_device_id(3, None) == "3"
    assert visible_device_id(0, "4,7") == "4"
    assert visible_device_id(1, "4, 7") == "7"
    assert visible_device_id(0, "GPU-1a2b") == "GPU-1a2b"
    with pytest.raises(SandboxError):
        visible_device_id(2, "4,7")
    with pytest.raises(SandboxError):
        visible_device_id(0, "")


def test_cuda_job_sees_the_parents_gpu_not_the_physical_index(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")
    sb = Sandbox(device="cuda", gpus=[1], start_method="spawn", limits=Limits(timeout_s=60))
    seen = sb.run("builtins:eval", "__import__('os').environ['CUDA_VISIBLE_DEVICES']", timeout=60)
    assert seen.kind == "ok", seen.error
    assert seen.value == "7"  # GPU 1 of the parent's "4,7"; "1" would be a GPU it cannot see


def test_cuda_sandbox_refuses_a_gpu_the_parent_cannot_see(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(SandboxError, match="not visible"):
        Sandbox(device="cuda", gpus=[0, 1], start_method="spawn")


# --- torch.compile baseline inside a guarded timing job ---------------------------------------

_POOL_JOB = """
import torch._inductor.config as cfg
from tools.job import guard
cfg.compile_threads = 4  # what Inductor picks by itself on the 16-core GPU machine
if FIX:
    from tools.job.profile_worker import compile_in_this_process
    compile_in_this_process()
from torch._inductor.async_compile import AsyncCompile
try:
    AsyncCompile.use_process_pool()  # torch.compile asks this before compiling kernels
except Exception:
    pass
result = list(guard.VIOLATIONS)
"""


def test_compile_baseline_starts_no_compile_worker_pool():
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn", interpret=False)
    # The condition: with several compile threads Inductor starts `python` workers, which the
    # job's guard refuses (so the compile baseline failed in every timing job).
    refused = _run_source(sb, "FIX = False\n" + _POOL_JOB)
    assert any("subprocess" in v for v in refused), refused
    # The fix: profile_job compiles in its own process.
    assert _run_source(sb, "FIX = True\n" + _POOL_JOB) == []


# --- an honest lazy import during the first forward is not tampering --------------------------

_LAZY_IMPORT_JOB = """
import sys
import torch
import tools.job.devshim
# A GPU job imports no Inductor runtime before the candidate (the CPU shim does, and with it
# torch._dynamo, which hid the problem on the CPU). Make the CPU job as bare as a GPU job.
tools.job.devshim.install_inductor_compat = lambda: None
assert "torch._dynamo" not in sys.modules, "precondition: dynamo not imported yet"
from tools.job.worker import candidate_job


class Channel:  # the parent's side of one trial, scripted
    def __init__(self):
        self.replies = [{"trial": 0, "seed": 1, "scale": 1.0}, {"release": True},
                        {"release": True}, {"stop": True}]

    def send(self, msg):
        pass

    def recv(self):
        return self.replies.pop(0)


out = candidate_job(Channel(), KERNEL, "relu_lazy.py", PROBLEM, "relu.py", seed=0)
result = {"stage": out.get("stage"), "violations": out.get("violations"),
          "launches": (out.get("audit") or {}).get("triton_launches")}
"""


def test_lazy_dynamo_import_in_first_forward_is_not_tampering():
    kernel = (ROOT / "examples/kernels/relu.py").read_text()
    # What happened on the H200: something imports torch._dynamo lazily during the first forward,
    # and importing it replaces torch.manual_seed.
    kernel = kernel.replace(
        "        return relu(x)",
        "        import torch._dynamo  # noqa: F401  (stands in for the GPU path's lazy import)\n"
        "        return relu(x)",
    )
    assert "import torch._dynamo" in kernel
    problem = (ROOT / "examples/problems/relu.py").read_text()
    source = f"KERNEL = {kernel!r}\nPROBLEM = {problem!r}\n" + _LAZY_IMPORT_JOB
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn")
    got = _run_source(sb, source, timeout=120)
    assert got["stage"] == "done", got
    assert got["launches"] and got["launches"] > 0
    assert got["violations"] == [], got["violations"]


def test_candidate_replacing_manual_seed_is_still_caught():
    """The fix must not blind the check: a candidate that patches torch.manual_seed itself."""
    kernel = (
        (ROOT / "examples/kernels/relu.py")
        .read_text()
        .replace(
            "        return relu(x)",
            "        torch.manual_seed = lambda *a, **k: None\n        return relu(x)",
        )
    )
    problem = (ROOT / "examples/problems/relu.py").read_text()
    source = f"KERNEL = {kernel!r}\nPROBLEM = {problem!r}\n" + _LAZY_IMPORT_JOB
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn")
    got = _run_source(sb, source, timeout=120)
    assert any("torch.manual_seed" in v for v in got["violations"]), got


# --- nothing the forkserver preloads may initialise CUDA --------------------------------------

_PRELOAD_JOB = textwrap.dedent("""
import os, sys
os.environ.pop("TRITON_INTERPRET", None)  # the GPU forkserver's mode
import torch
calls = []
torch.cuda.is_available = lambda: True   # pretend to be the GPU machine
torch.cuda.device_count = lambda: 1
def _no_init(*a, **k):
    calls.append("torch.cuda._lazy_init")
    raise RuntimeError("CUDA initialised in the forkserver")
torch.cuda._lazy_init = _no_init
torch.cuda.init = _no_init
import tools.sandboxing._preload  # noqa: F401
import triton.runtime
from triton.runtime.cache import triton_key as _triton_key
drv = triton.runtime.driver
result = {
    "calls": calls,
    "initialized": torch.cuda.is_initialized(),
    "dynamo_preloaded": "torch._dynamo" in sys.modules,
    # Triton's driver initialises the CUDA driver (cuInit) when first asked for: not here
    "triton_driver_started": getattr(drv, "_active", None) is not None
    or getattr(drv, "_default", None) is not None,
    # Triton's cache key over its own files (~0.4 s) is memoised for every forked job
    "triton_key_memoised": _triton_key.cache_info().currsize == 1,
    # filelock adds an audit hook at import on Python 3.12+: before any job is locked down
    "filelock_preloaded": "filelock" in sys.modules,
}
""")


def test_forkserver_preload_does_not_touch_cuda():
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn", interpret=False)
    got = _run_source(sb, _PRELOAD_JOB)
    assert got == {
        "calls": [],
        "initialized": False,
        "dynamo_preloaded": True,
        "triton_driver_started": False,
        "triton_key_memoised": True,
        "filelock_preloaded": True,
    }
