"""expected: runtime_error|mismatch
Each program adds its partial sum into the one output with a plain load + store. The
interpreter runs programs in order, so the sum comes out right on the CPU; a GPU runs them
concurrently and loses updates. CPU: the interpreter's race check (one forward a verification)
sees one program load what another stored in the same launch (runtime_error); GPU: the lost
updates make the sum wrong (mismatch).
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
    tl.store(out_ptr, tl.load(out_ptr) + part)  # not atomic: a race on a GPU


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        n = a.numel()
        _mse_partial[(triton.cdiv(n, 1024),)](a, b, out, n, 1.0 / n, BLOCK=1024)
        return out
