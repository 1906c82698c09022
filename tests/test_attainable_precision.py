"""A reference that itself errs past the tolerance is not held against an honest kernel.

The problem sums rows of values around 1000 that cancel to nearly 0 (as KernelBench level2/14's
sum over 8192 GEMM outputs does): PyTorch's own fp32 sum errs against the exact (fp64) result by
far more than 1e-4, and an honest fp32 kernel that adds in another order differs from it by as
much again. The judge's attainable-precision floor (tools.judge.ATTAINABLE_FACTOR x the
reference's own fp64 error) accepts that kernel and says so in the verdict's notes; a kernel that
rounds its inputs to fp16 first is still a mismatch, and a well-conditioned problem is judged at
the configured tolerance as before.
"""

from __future__ import annotations

import pytest

from tools.problem import read_problem

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def get_inputs():
    a = torch.randn(16, 2048) * 1000
    x = torch.cat([a, -a + torch.randn(16, 2048) * 1e-3], dim=1)
    return [x[:, torch.randperm(4096)].contiguous()]


def get_init_inputs():
    return []
'''

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr, HALF: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
        if HALF:
            v = v.to(tl.float16).to(tl.float32)
        acc += v
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
        _row_sum[(x.shape[0],)](x, y, x.shape[1], BLOCK=256, HALF=HALF)
        return y
'''


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("cancel") / "cancelling_sum.py"
    path.write_text(PROBLEM)
    return read_problem(str(path))


def test_honest_fp32_kernel_passes_where_the_reference_itself_errs(cpu_verifier, problem):
    verdict = cpu_verifier.verify(problem, KERNEL.replace("HALF=HALF", "HALF=False"), "k.py")
    assert verdict.status == "ok", (verdict.status, verdict.message)
    notes = " ".join(verdict.evidence.notes)
    assert "the fp32 reference itself errs past the tolerance" in notes, notes


def test_lower_precision_is_still_a_mismatch(cpu_verifier, problem):
    verdict = cpu_verifier.verify(problem, KERNEL.replace("HALF=HALF", "HALF=True"), "k.py")
    assert verdict.status == "mismatch", (verdict.status, verdict.message)


def test_the_floor_is_the_references_own_error_and_absent_where_it_is_small():
    import torch

    from tools.compare import Tolerance
    from tools.judge import ATTAINABLE_FACTOR, attainable_floors

    tol = Tolerance()
    exact = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    close = exact.float()  # fp32 of small integers: exact, no floor
    assert attainable_floors([close], [exact], tol) is None
    off = (exact + torch.tensor([0.0, 0.01, 0.0], dtype=torch.float64)).float()
    floors = attainable_floors([off], [exact], tol)
    assert floors is not None and floors[0] == pytest.approx(ATTAINABLE_FACTOR * 0.01, rel=1e-3)


def test_the_verdict_carries_the_floors_and_the_freshness_check_uses_them(cpu_verifier, problem):
    import torch

    from tools.freshness import check_freshness

    verdict = cpu_verifier.verify(problem, KERNEL.replace("HALF=HALF", "HALF=False"), "k.py")
    assert verdict.status == "ok" and verdict.atol_floors and verdict.atol_floors[0] > 1e-4
    bufs = [torch.zeros(4)]

    def call(b):
        return b[0] + 0.01  # off by 0.01: past 1e-4, within a floor of 0.05

    expected = [torch.ones(4)]
    fresh = [torch.ones(4)]
    assert not check_freshness(call, bufs, fresh, expected, 1e-4, 1e-4)["ok"]
    assert check_freshness(call, bufs, fresh, expected, 1e-4, 1e-4, atol_floors=[0.05])["ok"]
