"""LayerNorm in Triton: one program per row, mean and biased variance in fp32."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_cols, row_stride, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    # Padding lanes would add mean**2 each to the variance: zero them after centring.
    xc = tl.where(mask, x - mean, 0.0)
    # nn.LayerNorm uses the biased variance (divide by N, not N - 1).
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * row_stride + cols, xc * rstd * w + b, mask=mask)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float):
    n_cols = x.shape[-1]
    x2 = x.reshape(-1, n_cols).contiguous()
    y2 = torch.empty_like(x2)
    # Whole row in one block (257 -> 512): hidden sizes here are small enough for registers.
    block = triton.next_power_of_2(n_cols)
    _layernorm_kernel[(x2.shape[0],)](
        x2, weight, bias, y2, n_cols, x2.stride(0), eps, BLOCK_SIZE=block
    )
    return y2.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        # Same attribute name and init order as Model, so its state_dict loads into this one.
        self.ln = nn.LayerNorm(hidden, eps=eps, elementwise_affine=True)
        with torch.no_grad():
            self.ln.weight.copy_(torch.randn(hidden))
            self.ln.bias.copy_(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layernorm(x, self.ln.weight, self.ln.bias, self.ln.eps)
