# Expected status: mismatch. The grid uses floor division, so the last partial block
# (13000 % 1024 = 712 elements) is never processed and keeps whatever torch.empty held.
# Only the tail is wrong: the verifier's pattern hint should point at masking / the grid.
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def relu(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    grid = (n // BLOCK_SIZE,)  # BUG: should be triton.cdiv(n, BLOCK_SIZE)
    _relu_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu(x)
