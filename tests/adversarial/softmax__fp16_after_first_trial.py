"""expected: mismatch
The fp16-rounding softmax (softmax__fp16_hidden_in_tolerance), exact on its first two calls
and rounding its outputs below 0.15 through fp16 from the third on: every element stays inside
atol 1e-4, and the first trial (the only one the precision check used to look at) is fp32
exact. Each trial's first run now goes through the precision check: a later trial flags it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS = [0]


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, ROUND: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    if ROUND:
        small = y < 0.15
        y = tl.where(small, y.to(tl.float16).to(tl.float32), y)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        _CALLS[0] += 1
        y = torch.empty_like(x)
        block = triton.next_power_of_2(x.shape[1])
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=block, ROUND=_CALLS[0] > 2)
        return y
