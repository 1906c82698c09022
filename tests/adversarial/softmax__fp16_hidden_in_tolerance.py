"""expected: mismatch
An fp32 softmax that rounds its outputs below 0.15 through fp16: each is off by up to
3.7e-5, inside atol 1e-4, so every element passes the tolerance. Against an fp64 reference its
error is some 300x PyTorch's own fp32 error: the first trial's precision check flags it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    small = y < 0.15
    y = tl.where(small, y.to(tl.float16).to(tl.float32), y)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
