"""expected: mismatch
A row softmax as exp(x) / sum(exp(x)), without subtracting the row's max first: exact on randn
inputs (exp of |x| < 5 is far from fp32's overflow at 88.7), NaN (inf / inf) on the rows of the
x100 scale trial that reach past it. PyTorch's softmax is right there; this kernel agrees with it
only inside the problem's own input range.
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
    e = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
