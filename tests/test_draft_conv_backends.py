"""Issue 33: a draft does not have Inductor generate Triton conv templates it drops
(tools/draft/settings.py `max_autotune_conv_backends`)."""

from __future__ import annotations

CONV = """import torch
import torch.nn as nn

batch_size = 1


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, 4, 6, 6)]


def get_init_inputs():
    return []
"""


def test_no_conv_template_generated_for_a_library_conv(monkeypatch):
    """Convolutions keep the library choice (replaced by tools.kernels.triton_conv), so Inductor is not
    asked to generate its Triton conv templates only to drop them (their codegen grew faster
    than the layers: issue 33); the `inductor_conv` settings still get them."""
    from torch._inductor.select_algorithm import TritonTemplate

    from tools.draft import draft_candidate

    generated: list[str] = []
    real = TritonTemplate.generate

    def counting(self, *args, **kwargs):
        generated.append(self.name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TritonTemplate, "generate", counting)
    result = draft_candidate(CONV)
    assert "triton_convolution(" in result.source
    assert [g for g in generated if "conv" in g] == []
    draft_candidate(CONV, settings="inductor_conv")
    assert [g for g in generated if "conv" in g], generated
