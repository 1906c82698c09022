"""nn.Linear followed by GELU (tanh approximation): a matmul with a fused epilogue.

The tanh approximation is used because libdevice (and so erf) is not available in the Triton
interpreter; a kernel computes tanh from tl.exp.
"""

import torch
import torch.nn as nn

BATCH = 33
IN_FEATURES = 100
OUT_FEATURES = 75


class Model(nn.Module):
    """y = gelu_tanh(x @ W.T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gelu = nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
