"""expected: mismatch
Computes min(max(x, 0), 6): identical to ReLU on randn inputs (|x| < 6 with near certainty), so
every trial at the problem's own scale passes. Under the default protocol (issue 35) every
verification also runs a trial with the inputs x100, where it is wrong; relu__relu6_default_
distribution is the same kernel from when that trial had to be asked for.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.minimum(tl.maximum(x, 0.0), 6.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
