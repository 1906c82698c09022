"""A compiler draft whose reduced-precision GEMM is a mismatch is retried at full precision.

On the H200, KernelBench level2/14 (a GEMM on positive inputs, then a sum over 8192 outputs)
drafted with `precision='tf32x3'` was a mismatch, and a run with no model stopped there. The
stand-in draft below behaves like that: its `gemm` is off by 1% unless `precision == 'ieee'`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import AgentConfig
from agent.runner import run
from agent.tuning import FULL_PRECISION, precision_fallback
from tests.helpers import EX

MATMUL = str(EX / "problems" / "matmul.py")

DRAFT = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, scale, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :],
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :],
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc * scale,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def gemm(a, b, out, BLOCK_M=32, precision="tf32x3"):
    M, K = a.shape
    N = b.shape[1]
    scale = 1.0 if precision == "ieee" else 1.01  # a reduced precision that errs
    _mm[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_M))](
        a, b, out, M, N, K, scale, BLOCK=BLOCK_M, BLOCK_K=16)
    return out


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=torch.float32)
        return gemm(a.contiguous(), b.contiguous(), out=out, BLOCK_M=32, precision="tf32x3")
"""


def test_fallback_only_for_a_mismatching_reduced_precision_compiler_draft():
    def attempt(source, status, code=DRAFT, index=0):
        return {"index": index, "source": source, "status": status, "code": code}

    fb = precision_fallback({"attempts": [attempt("compiler", "mismatch")], "best": None})
    assert fb is not None and fb["source"] == FULL_PRECISION
    model_new = fb["code"].split("class ModelNew")[1]
    assert "precision='ieee'" in model_new and "tf32x3" not in model_new
    # not for: another status, a model's kernel, a run with a correct kernel, a second time
    assert precision_fallback({"attempts": [attempt("compiler", "compile_error")]}) is None
    assert precision_fallback({"attempts": [attempt("llm:x", "mismatch")]}) is None
    assert (
        precision_fallback({"attempts": [attempt("compiler", "mismatch")], "best": {"index": 1}})
        is None
    )
    tried = [attempt("compiler", "mismatch"), attempt(FULL_PRECISION, "mismatch", index=1)]
    assert precision_fallback({"attempts": tried}) is None


@pytest.mark.timeout(300)
def test_a_run_without_a_model_retries_the_draft_at_full_precision(tmp_path, monkeypatch):
    from agent import drafters
    from agent.state import Candidate

    def fake_draft(self, problem_source, problem_path, **kwargs):
        return Candidate(source="compiler", prompt=None, response="stand-in draft", code=DRAFT)

    monkeypatch.setattr(drafters.CompilerDrafter, "draft", fake_draft)
    config = AgentConfig(
        budget=3, trials=2, timeout_s=60, runs_dir=str(tmp_path / "runs"), device="cpu"
    )
    result = run(MATMUL, config)
    sources = [a["source"] for a in result["attempts"]]
    statuses = [a["status"] for a in result["attempts"]]
    assert sources == ["compiler", FULL_PRECISION], (sources, statuses)
    assert statuses == ["mismatch", "ok"], statuses
    best = Path(result["run_dir"], "best_kernel.py").read_text()
    model_new = best.split("class ModelNew")[1]
    assert "precision='ieee'" in model_new and "tf32x3" not in model_new
