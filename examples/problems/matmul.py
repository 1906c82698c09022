"""Plain matrix multiplication C = A @ B with sizes that are not powers of two."""

import torch
import torch.nn as nn

M = 67
K = 129
N = 95


class Model(nn.Module):
    """C = A @ B, A: (M, K), B: (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
