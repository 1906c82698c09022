"""Several inputs and several outputs: the harness must compare every output, in order."""

import torch
import torch.nn as nn

ROWS = 17
COLS = 301


class Model(nn.Module):
    """Returns (a * b + c, maximum(a, b))."""

    def __init__(self):
        super().__init__()

    def forward(
        self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return a * b + c, torch.maximum(a, b)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
