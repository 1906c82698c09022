"""SwiGLU's gating: silu(a) * b, fp32."""

import torch
import torch.nn as nn

BATCH = 4096
HIDDEN = 8192


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(a) * b


def get_inputs():
    return [torch.randn(BATCH, HIDDEN), torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return []
