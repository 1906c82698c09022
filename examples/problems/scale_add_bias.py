"""Elementwise affine with learnable parameters and a constructor argument.

The parameters are random (not ones/zeros), so a kernel that ignores them, or that reads them
with the wrong broadcast, fails.
"""

import torch
import torch.nn as nn

BATCH = 23
NUM_FEATURES = 191


class Model(nn.Module):
    """y = x * scale + bias, scale and bias of shape (num_features,) broadcast over rows."""

    def __init__(self, num_features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.bias


def get_inputs():
    return [torch.randn(BATCH, NUM_FEATURES)]


def get_init_inputs():
    return [NUM_FEATURES]
