"""Elementwise ReLU: the smallest possible problem (one load, one max, one store)."""

import torch
import torch.nn as nn

# 13 x 1000 = 13000 elements: not a multiple of any power-of-two block, so the last
# block of a 1-D launch is partial and masking is exercised.
BATCH = 13
DIM = 1000


class Model(nn.Module):
    """y = relu(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
