"""expected: shape_mismatch
Computes ReLU with a Triton kernel, then returns it as a sparse COO tensor: right values, but not
a dense strided tensor. It has no single storage to export (no data_ptr, no contiguous bytes), so
it must be judged a wrong output, not crash the harness.
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
        return relu(x).to_sparse()
