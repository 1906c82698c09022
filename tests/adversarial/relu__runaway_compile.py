"""expected: timeout
tl.static_range(10**6) unrolls a million iterations at compile time (on the CPU interpreter it
runs them one by one). Killed at the job timeout.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _unrolled_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    acc = tl.zeros_like(x)
    for _ in tl.static_range(1000000):
        acc += x
    tl.store(y_ptr + offsets, tl.maximum(x, 0.0) + acc * 0.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _unrolled_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
