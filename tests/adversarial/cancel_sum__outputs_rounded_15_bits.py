"""expected: mismatch
The fp32 row sum of cancel_sum__fp32_blocked_honest with each output rounded to 15 mantissa bits
(a relative error up to 2^-16, 1.5e-5: inside 1e-4 everywhere it is not already outside). Where
a row cancels by 1000 that is below PyTorch's own fp32 error, and the fp64 rule excused those
rows; where it cancels by 10 it is 20x PyTorch's largest error over its draws, which the
precision check's 64x over one draw let through: `ok` before issue 35. A kernel the rule excuses
anywhere is now held to fp32 accuracy on every element of that output (8x PyTorch's own error
over its draws), and this one is not.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum_15_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        mask = (rows[:, None] < n_rows) & (offs[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * stride + offs[None, :], mask=mask, other=0.0)
    y = tl.sum(acc, axis=1)
    # round to nearest, 15 of the 23 stored mantissa bits kept
    y = ((y.to(tl.int32, bitcast=True) + 0x80) & -256).to(tl.float32, bitcast=True)
    tl.store(y_ptr + rows, y, mask=rows < n_rows)


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        _row_sum_15_kernel[(triton.cdiv(rows, 64),)](x, y, rows, cols, x.stride(0), ROWS=64, BLOCK=256)
        return y
