"""The drafter asks Inductor for the library choice of a GEMM only (`tools.draft.settings`):
`inductor_patches.choices_kept` drops Inductor's Triton GEMM templates anyway (the rewriter
writes this project's GEMM template at the extern call), and generating them cost about half of
a GEMM-heavy draft's time (a 16-Linear MLP on the CPU path: 17 template choices an addmm, 3.8
of 7.7 CPU s; issue 33: a network's draft time grows with its layers)."""

from __future__ import annotations

from torch._inductor import select_algorithm

from tools.draft.job import draft_candidate
from tools.draft.settings import inductor_options

MLP = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(32, 32), nn.ReLU())])

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
"""


def test_no_triton_gemm_template_is_generated_for_a_gemm_the_rewriter_replaces(monkeypatch):
    generated: list[str] = []
    original = select_algorithm.TritonTemplate.generate

    def counting(self, *args, **kwargs):
        generated.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(select_algorithm.TritonTemplate, "generate", counting)
    result = draft_candidate(MLP, device="cpu")
    assert generated == []  # 4 addmms x 17 choices before
    assert "_gemm_kernel" in result.source  # still this project's GEMM template at each call
    calls = [line for line in result.source.splitlines() if line.strip().startswith("gemm(")]
    assert len(calls) == 4, calls


def test_inductors_conv_templates_keep_the_triton_backend():
    """torch's `use_triton_template` reads the GEMM backends for every template: the
    `inductor_conv` settings (Inductor's own Triton conv templates) must keep TRITON."""
    assert inductor_options("cpu")["max_autotune_gemm_backends"] == "ATEN"
    conv = inductor_options("cpu", "inductor_conv")["max_autotune_gemm_backends"]
    assert "TRITON" in conv.split(",")
