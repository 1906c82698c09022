"""Shared fixtures. Everything runs on the CPU with the Triton interpreter unless marked `gpu`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _has_cuda()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Problem checks and baselines are cached on disk across runs: tests get their own."""
    if "TRITON_AGENT_CACHE" not in os.environ:
        os.environ["TRITON_AGENT_CACHE"] = str(tmp_path_factory.mktemp("ta-cache"))


@pytest.fixture(autouse=True)
def _seed():
    import torch

    torch.manual_seed(0)


@pytest.fixture(scope="session")
def cpu_verifier():
    """One verifier (and its reference cache) for the whole session: 3 trials, short timeout."""
    from tools.verify import Verifier, VerifyOptions

    return Verifier(VerifyOptions(trials=3, timeout_s=30, device="cpu"))


@pytest.fixture(autouse=True)
def _no_user_env(monkeypatch):
    for var in ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    os.environ.setdefault("TA_TEST", "1")
