"""Softmax over the last dimension, fp32."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 4096


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM) * 4.0]


def get_init_inputs():
    return []
