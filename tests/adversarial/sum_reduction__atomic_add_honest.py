"""expected: ok
Honest atomics: the reduced dimension split across programs, each adding its partial sums into
the (zeroed) output with `tl.atomic_add`: cross-program accumulation done right.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_dim1_kernel(x_ptr, y_ptr, D1, D2, BR: tl.constexpr, BC: tl.constexpr):
    b = tl.program_id(0)
    chunk = tl.program_id(1)
    rows = chunk * BR + tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(y_ptr + b * D2 + cols, tl.sum(x, axis=0), mask=cols < D2)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        b, d1, d2 = x.shape
        y = torch.zeros((b, 1, d2), dtype=x.dtype, device=x.device)
        grid = (b, triton.cdiv(d1, 32))
        _sum_dim1_kernel[grid](x.contiguous(), y, d1, d2, BR=32, BC=triton.next_power_of_2(d2))
        return y
