"""expected: timeout
A loop that never ends inside the Triton kernel: the interpreter (or the GPU) never returns. Killed
at the job timeout. (`while i >= 0: i += 1` was not enough: on the GPU the compiler treats the
signed overflow as impossible and drops the loop; this one wraps without overflowing
and stores on every turn, a side effect no compiler may drop.)
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _spin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    i = 0
    while i >= 0:
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
        i = (i + 1) % 1000


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _spin_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
