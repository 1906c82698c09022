# Expected status: compile_error. The block is sized to the row (333) instead of the next power
# of two: tl.arange requires a power-of-two range, so the kernel is rejected before it runs.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)  # BUG: BLOCK_SIZE = 333 is not a power of two
    x = tl.load(x_ptr + row * row_stride + cols)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * row_stride + cols, num / tl.sum(num, axis=0))


def softmax(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, y, x.stride(0), BLOCK_SIZE=x.shape[1])
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax(x)
