"""LayerNorm over the last dimension with a learnable weight and bias."""

import torch
import torch.nn as nn

BATCH = 19
HIDDEN = 257
EPS = 1e-5


class Model(nn.Module):
    """y = LayerNorm(x) with elementwise_affine=True."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps, elementwise_affine=True)
        # nn.LayerNorm starts at weight=1, bias=0, which would let a kernel that ignores the
        # affine part pass; random values make the weights matter.
        with torch.no_grad():
            self.ln.weight.copy_(torch.randn(hidden))
            self.ln.bias.copy_(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(BATCH, HIDDEN) * 2.0 + 0.5]


def get_init_inputs():
    return [HIDDEN, EPS]
