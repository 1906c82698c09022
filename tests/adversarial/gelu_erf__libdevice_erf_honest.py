"""expected: ok
Honest: exact GELU, 0.5 x (1 + erf(x / sqrt 2)), with erf from libdevice reached as
`tl.extra.cuda.libdevice` (the spelling of older Triton releases' tutorials). Must be verifiable
on the CPU.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _gelu_kernel[(triton.cdiv(n, 512),)](x, y, n, BLOCK=512)
        return y
