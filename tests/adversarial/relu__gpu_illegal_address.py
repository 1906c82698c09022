"""expected: crash|runtime_error
requires: cuda
An unmasked store at a huge offset: on a GPU, an illegal memory access that poisons the CUDA
context. The error surfaces at the next synchronisation (runtime_error) or takes the worker down
(crash); either way the harness goes on. GPU only: the CPU interpreter would write
into the host heap.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _wild_store_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements)
    tl.store(y_ptr + offsets + (1 << 40), x)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _wild_store_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
