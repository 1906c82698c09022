"""tools/compute_block in this process (no sandbox job): during the block a library GEMM is
refused at every level of the dispatcher under the strict list, and runs under the lenient one;
the refusal is recorded where the caller's code cannot reach it."""

from __future__ import annotations

import pytest
import torch

from tools.compute_block import ComputeRefused, blocked_operators, compute_blocked, is_library

KEY = "CPU"


@pytest.fixture(scope="module")
def lists():
    return blocked_operators(KEY), blocked_operators(KEY, allow_library=True)


def _mm_below_the_python_key(a, b):
    return torch.ops.aten.mm.default.redispatch(
        torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), a, b
    )


def test_the_strict_list_adds_the_library_gemms(lists):
    strict, lenient = lists
    assert {"mm", "addmm", "bmm"} <= set(strict) - set(lenient)
    assert all(is_library(f"aten.{op}") for op in set(strict) - set(lenient))
    assert not is_library("aten.relu") and is_library("aten.addmm_") and is_library("aten.mm.out")


@pytest.mark.parametrize("call", [torch.mm, _mm_below_the_python_key], ids=["mm", "redispatch"])
def test_a_library_gemm_is_refused_under_the_strict_list(lists, call):
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    with compute_blocked(lists[0], KEY) as refused:
        with pytest.raises(ComputeRefused):
            call(a, b)
    assert refused == ["aten.mm"]
    torch.testing.assert_close(call(a, b), a @ b)  # the real kernel is back after the block


def test_under_the_lenient_list_the_library_runs_and_other_compute_is_refused(lists):
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    with compute_blocked(lists[1], KEY) as refused:
        out = _mm_below_the_python_key(a, b)
        with pytest.raises(ComputeRefused):
            torch.relu(a)
    torch.testing.assert_close(out, a @ b)
    assert refused == ["aten.relu"]
