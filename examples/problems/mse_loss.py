"""Mean squared error reduced to a 0-dim scalar: a full reduction across many programs."""

import torch
import torch.nn as nn

BATCH = 50
DIM = 999  # 49950 elements: many blocks, the last one partial


class Model(nn.Module):
    """loss = mean((a - b) ** 2), a 0-dim tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
