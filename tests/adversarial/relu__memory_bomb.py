"""expected: resource
Allocates 1 TB in forward (more than an H200's 141 GB). The job's address-space limit (CPU) or
the device (GPU, out of memory; retried alone) refuses it: `resource`, with the figures; the
harness is untouched.
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
        hog = torch.empty(250 * 10**9, dtype=torch.float32, device=x.device)
        del hog
        return relu(x)
