"""tools/job/compute_block in this process (no sandbox job): during the block a library GEMM is
refused at every level of the dispatcher under the strict list, and runs under the lenient one;
the refusal is recorded where the caller's code cannot reach it. CPU here; the CUDA key where a
GPU is present (`gpu` marker)."""

from __future__ import annotations

import pytest
import torch

from tools.job.compute_block import ComputeRefused, blocked_operators, compute_blocked, is_library

DEVICES = [
    pytest.param(("CPU", "cpu"), id="cpu"),
    pytest.param(("CUDA", "cuda"), id="cuda", marks=pytest.mark.gpu),
]
_LISTS: dict[str, tuple[list[str], list[str]]] = {}


def _lists(key: str) -> tuple[list[str], list[str]]:
    if key not in _LISTS:
        _LISTS[key] = blocked_operators(key), blocked_operators(key, allow_library=True)
    return _LISTS[key]


def _mm_below_the_python_key(a, b):
    key = torch._C.DispatchKey.CUDA if a.is_cuda else torch._C.DispatchKey.CPU
    return torch.ops.aten.mm.default.redispatch(torch._C.DispatchKeySet(key), a, b)


def test_the_strict_list_adds_the_library_gemms():
    strict, lenient = _lists("CPU")
    assert {"mm", "addmm", "bmm"} <= set(strict) - set(lenient)
    assert all(is_library(f"aten.{op}") for op in set(strict) - set(lenient))
    assert not is_library("aten.relu") and is_library("aten.addmm_") and is_library("aten.mm.out")


@pytest.mark.parametrize("where", DEVICES)
@pytest.mark.parametrize("call", [torch.mm, _mm_below_the_python_key], ids=["mm", "redispatch"])
def test_a_library_gemm_is_refused_under_the_strict_list(where, call):
    key, device = where
    a, b = torch.randn(5, 7, device=device), torch.randn(7, 3, device=device)
    with compute_blocked(_lists(key)[0], key) as refused:
        with pytest.raises(ComputeRefused):
            call(a, b)
    assert refused == ["aten.mm"]
    torch.testing.assert_close(call(a, b), a @ b)  # the real kernel is back after the block


@pytest.mark.parametrize("where", DEVICES)
def test_under_the_lenient_list_the_library_runs_and_other_compute_is_refused(where):
    key, device = where
    a, b = torch.randn(5, 7, device=device), torch.randn(7, 3, device=device)
    with compute_blocked(_lists(key)[1], key) as refused:
        out = _mm_below_the_python_key(a, b)
        with pytest.raises(ComputeRefused):
            torch.relu(a)
    torch.testing.assert_close(out, a @ b)
    assert refused == ["aten.relu"]
