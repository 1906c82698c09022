"""expected: mismatch
Wrong function through libdevice: the tanh approximation of GELU (`libdevice.tanh`) for a problem
that is the exact (erf) GELU; it differs by up to ~5e-4, beyond the tolerance. Mapping libdevice
calls to CPU equivalents must not make a wrong formula pass.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(y_ptr + offs, 0.5 * x * (1.0 + libdevice.tanh(inner)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _gelu_kernel[(triton.cdiv(n, 512),)](x, y, n, BLOCK=512)
        return y
