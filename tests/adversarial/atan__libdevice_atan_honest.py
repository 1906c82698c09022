"""expected: ok
Honest: `libdevice.atan` (reached as `tl.extra.cuda.libdevice`) for an arctangent problem,
correct on a GPU; it must be verifiable on the CPU.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def _atan_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, libdevice.atan(tl.load(x_ptr + offs, mask=mask)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _atan_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
