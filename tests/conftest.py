"""Shared fixtures. Everything runs on the CPU with the Triton interpreter unless marked `gpu`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One OpenMP thread per process: the suite runs 2 xdist workers on 2 cores, each starting job
# processes of its own; more threads than cores only contend (measured in session 19: 13 % less
# work over the whole suite). Set before torch is imported here; a caller's own value stays.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _has_cuda()


# The longest files first (measured: `pytest --durations`): with one file per worker
# (`--dist loadfile`), a long file collected last ran alone at the end and the suite took
# 11 minutes on 2 cores instead of the 10 it is kept under.
LONG_FILES = (
    "test_large_cpu.py",
    "test_adversarial.py",
    "test_verify.py",
    "test_inductor_draft.py",
    "test_real_model.py",
    "test_triton_conv.py",
    "test_triton_conv_draft.py",
    "test_interrupt.py",
    "test_loop.py",
    "test_bench.py",
    "test_stochastic_verify.py",
)


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))  # stable


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Problem checks, baselines and compiler drafts are cached on disk across runs: the suite
    gets its own cache, one for all of a run's xdist workers, so a problem drafted by one test
    file is a cache hit in another on either worker (every cache file is written atomically: two
    workers updating one at once lose an entry at worst, which only costs time). A test that
    needs an empty cache sets TRITON_AGENT_CACHE itself."""
    if "TRITON_AGENT_CACHE" not in os.environ:
        base = tmp_path_factory.getbasetemp()
        if os.environ.get("PYTEST_XDIST_WORKER"):
            base = base.parent  # the run's own directory, above each worker's popen-gwN
        cache = base / "ta-cache"
        cache.mkdir(exist_ok=True)
        os.environ["TRITON_AGENT_CACHE"] = str(cache)


@pytest.fixture(autouse=True)
def _seed():
    import torch

    torch.manual_seed(0)


@pytest.fixture(scope="session")
def cpu_verifier():
    """One verifier (and its reference cache) for the whole session: 3 trials. Its job timeout
    only has to outlast a loaded machine (the suite must pass beside another suite on 2 cores):
    at 30 s, jobs were killed as `timeout` at a load average of 12 (session 15). A test that
    expects a timeout makes its own verifier with a short one."""
    from tools.orchestrate.verify import Verifier, VerifyOptions

    return Verifier(VerifyOptions(trials=3, timeout_s=120, device="cpu"))


@pytest.fixture(autouse=True)
def _no_user_env(monkeypatch):
    for var in ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    os.environ.setdefault("TA_TEST", "1")
