"""expected: mismatch
Rounds only the small outputs (below 1e-3) to bf16 (8 mantissa bits against fp32's 24), on every
run: each rounded element errs up to 2^-9 of itself, thousands of times an fp32 error there,
but at most 2e-6 in absolute terms, below the whole output's largest fp32 error times the
precision check's factor (the large elements set the scale) and far inside atol 1e-4.
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
    y = tl.where(y < 1e-3, y.to(tl.bfloat16).to(tl.float32), y)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        block = triton.next_power_of_2(x.shape[1])
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=block)
        return y
