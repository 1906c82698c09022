"""No absolute tolerance derived from an output's largest values excuses its small ones.

Session 7 tried an "attainable-precision floor" (atol >= 4x the fp32 reference's largest error
against fp64, for the whole output). On `cat([x * 1e6, x * 1e-3])` that floor was about 0.5, and a
kernel that leaves the small half at zero verified `ok`; the floor was withdrawn. This keeps it
out: the same kernel is a mismatch, the honest one is ok.
"""

from __future__ import annotations

import pytest

from tools.core.problem import read_problem

PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cat([x * 1e6, x * 1e-3])


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
"""

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        n = x.numel()
        y = torch.zeros(2 * n, device=x.device, dtype=x.dtype)
        _scale[(triton.cdiv(n, 1024),)](x, y, n, 1e6, BLOCK=1024)
        if HONEST:
            _scale[(triton.cdiv(n, 1024),)](x, y[n:], n, 1e-3, BLOCK=1024)
        return y
"""


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("mixed") / "mixed_scale.py"
    path.write_text(PROBLEM)
    return read_problem(str(path))


def test_small_half_left_at_zero_is_a_mismatch(cpu_verifier, problem):
    verdict = cpu_verifier.verify(problem, KERNEL.replace("HONEST", "False"), "k.py")
    assert verdict.status == "mismatch", (verdict.status, verdict.message)


def test_honest_kernel_is_ok(cpu_verifier, problem):
    verdict = cpu_verifier.verify(problem, KERNEL.replace("HONEST", "True"), "k.py")
    assert verdict.status == "ok", (verdict.status, verdict.message)
