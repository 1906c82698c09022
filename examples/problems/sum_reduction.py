"""Sum over the middle dimension of a 3-D tensor, keeping the reduced dimension."""

import torch
import torch.nn as nn

BATCH = 7
# The reduced dimension: one past a power of two, so a kernel that reduces a single 128-row
# block without looping misses a row.
DIM1 = 129
DIM2 = 65
REDUCE_DIM = 1


class Model(nn.Module):
    """y = x.sum(dim, keepdim=True)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, DIM1, DIM2)]


def get_init_inputs():
    return [REDUCE_DIM]
