"""expected: ok
Honest: a row sum in fp32, 256 lanes accumulated over the row (64 rows a program), then a tree sum; another order
than PyTorch's, so where a row cancels it lands outside 1e-4 of PyTorch's fp32 value on some
rows, and the fp64 rule excuses them (each as close to the fp64 value as PyTorch's own fp32 draws
come, the rows cancel, and fewer of them than PyTorch's own draws miss: issue 35).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        offs = c0 + tl.arange(0, BLOCK)
        mask = (rows[:, None] < n_rows) & (offs[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * stride + offs[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


class ModelNew(nn.Module):
    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        _row_sum_kernel[(triton.cdiv(rows, 64),)](x, y, rows, cols, x.stride(0), ROWS=64, BLOCK=256)
        return y
