"""expected: resource|crash
Grows a Python bytearray to 100 GB: MemoryError under the job's address-space limit (out of
memory: `resource`); on a GPU job, where RLIMIT_AS is off, the parent's resident-set poll kills
it: crash.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


def relu(x):
    y = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        hog = bytearray(100 * 2**30)
        return relu(x) if hog else None
