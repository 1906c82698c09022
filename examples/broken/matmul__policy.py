# Expected status: cheat. The answer comes from torch.matmul inside forward; the Triton kernel
# launched beside it only copies one element around, so "a Triton launch happened" is true
# but the work was done by PyTorch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(src_ptr, dst_ptr):
    tl.store(dst_ptr, tl.load(src_ptr))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        c = torch.matmul(a, b)
        scratch = torch.empty(1, dtype=a.dtype, device=a.device)
        _touch_kernel[(1,)](c, scratch)
        return c
