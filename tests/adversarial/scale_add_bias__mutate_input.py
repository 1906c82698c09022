"""expected: mismatch
Writes its result into the input buffer as well as into a fresh output: the input is modified in
place, which the reference does not do.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sab_kernel(x_ptr, s_ptr, b_ptr, y_ptr, n, f, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = x * tl.load(s_ptr + offs % f, mask=m) + tl.load(b_ptr + offs % f, mask=m)
    tl.store(y_ptr + offs, y, mask=m)
    tl.store(x_ptr + offs, y, mask=m)  # scribbles over the input


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))

    def forward(self, x):
        y = torch.empty_like(x)
        _sab_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.scale, self.bias, y, x.numel(),
                                                     x.shape[-1], BLOCK=1024)
        return y
