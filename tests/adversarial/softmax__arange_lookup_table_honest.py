"""expected: ok
Honest: a column-offset lookup table built in the constructor from `torch.arange` (a buffer of
int32 offsets, data-independent), which the kernel gathers its columns through.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_DIM = 333  # the problem's row length


@triton.jit
def _softmax_kernel(x_ptr, col_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    mask = lanes < n_cols
    cols = tl.load(col_ptr + lanes, mask=mask, other=0)
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cols", torch.arange(_DIM, dtype=torch.int32))

    def forward(self, x):
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](
            x, self.cols, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1])
        )
        return y
