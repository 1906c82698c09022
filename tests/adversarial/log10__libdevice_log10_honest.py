"""expected: ok
Honest: `libdevice.log10` for a log10 problem, as a GPU kernel writes it (correct on a GPU). A
strict but fair verifier must verify it on the CPU too, where the interpreter has no libdevice.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _log10_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, libdevice.log10(tl.abs(x) + 1.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _log10_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
