"""expected: ok
Honest: the same partial sums accumulated with tl.atomic_add (launches with atomics are left
out of the race check: atomics can order programs).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mse_partial(a_ptr, b_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(a_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + offs, mask=mask, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    tl.atomic_add(out_ptr, part)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        n = a.numel()
        _mse_partial[(triton.cdiv(n, 1024),)](a, b, out, n, 1.0 / n, BLOCK=1024)
        return out
