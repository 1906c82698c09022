"""expected: ok
Honest: the work inside a launch depends on the input values, and only on them. The grid has
spare programs that return at once; each block loads its values, and a block whose sum is
negative computes from them, where the others load their block again in a loop whose bound
(the number of positive elements, at most one pass) is computed on the device. On the same
inputs the interpreter counts the same loads and stores every time, so a trial's repeated run
does the first run's work.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_skip_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:  # spare programs of the rounded-up grid
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    positives = tl.sum((x > 0).to(tl.int32), axis=0)
    if (tl.sum(x, axis=0) < 0) | (positives == 0):  # about half the blocks: from the values
        tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=m)
    else:
        for _ in range(0, tl.minimum(positives, 1)):  # a bound computed from the data (1)
            tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        block = 256
        _relu_skip_kernel[(triton.cdiv(n, block) + 2,)](x, y, n, BLOCK=block)
        return y
