"""expected: mismatch
Computes every other element and leaves zeros elsewhere (half of ReLU's outputs are zero anyway,
so about a quarter of the elements are wrong).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_even_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = 2 * (tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE))
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        _relu_even_kernel[(triton.cdiv(x.numel(), 2048),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
