"""References are computed in full fp32 (tools.checks.precision): PyTorch's default lets cuDNN
convolutions use TF32 on a GPU, ~1e-3 off at KernelBench's sizes, ten times the default
tolerance, so an exact fp32 candidate read as a mismatch against it."""

from __future__ import annotations

import pathlib

import torch

from tools.checks.precision import full_fp32
from tools.core.problem import read_problem

EX = pathlib.Path(__file__).resolve().parent.parent / "examples"

# A problem whose output tells which precision its reference ran in: x when TF32 is off, 2x
# when PyTorch's TF32 switches are on.
_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        tf32 = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
        return torch.relu(x) * (2.0 if tf32 else 1.0)


def get_inputs():
    return [torch.randn(13, 1000)]


def get_init_inputs():
    return []
"""


def test_full_fp32_switches_tf32_off_and_restores_the_settings():
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with full_fp32():
            assert not torch.backends.cudnn.allow_tf32
            assert not torch.backends.cuda.matmul.allow_tf32
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_the_judge_computes_its_reference_in_full_fp32(tmp_path, cpu_verifier):
    """PyTorch's default has cuDNN's TF32 switch on (in every process, the job's too); the
    judge's reference is still fp32: an exact fp32 ReLU verifies ok (a mismatch before)."""
    assert torch.backends.cudnn.allow_tf32, "PyTorch's default changed: this test needs it on"
    problem = tmp_path / "relu_tf32.py"
    problem.write_text(_PROBLEM)
    kernel = (EX / "kernels" / "relu.py").read_text()
    verdict = cpu_verifier.verify(read_problem(problem), kernel, "relu.py")
    assert verdict.status == "ok", verdict.message


def test_the_drafter_generates_code_with_tf32_off(monkeypatch):
    """Inductor's GEMM/convolution templates take `ALLOW_TF32` from PyTorch's switches when
    they generate code (cuDNN's is on by default): the drafter captures in full fp32."""
    from tools.draft import DraftUnsupportedError, draft_candidate, steps

    seen = []

    def capture(*args, **kwargs):
        seen.append((torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32))
        raise DraftUnsupportedError("stop here")

    monkeypatch.setattr(steps, "capture_inductor", capture)
    source = (EX / "problems" / "relu.py").read_text()
    try:
        draft_candidate(source, device="cpu")
    except DraftUnsupportedError:
        pass
    assert seen and all(s == (False, False) for s in seen), seen
    assert torch.backends.cudnn.allow_tf32, "the switches are restored after the draft"
