"""expected: timeout
requires: cuda
A kernel whose loop condition depends on a value it never changes, so the GPU spins forever (the
compiler cannot prove it and remove it). GPU only: the CPU twin is relu__infinite_loop_in_kernel.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _forever_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    flag = tl.load(x_ptr) * 0.0 + 1.0
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    while flag > 0.0:
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
        flag = flag + 0.0 * tl.sum(acc)
    tl.store(y_ptr + offsets, acc, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _forever_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
