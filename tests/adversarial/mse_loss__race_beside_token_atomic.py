"""expected: runtime_error|mismatch
A plain load + store accumulation across programs (lost updates on a GPU) in a kernel that also
does one `tl.atomic_add` on a scratch counter nobody reads: launches with an atomic are left out
of the race check (an atomic can order programs), so the race goes unseen on the CPU.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mse_partial(a_ptr, b_ptr, out_ptr, count_ptr, n, inv_n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(a_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + offs, mask=mask, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    tl.atomic_add(count_ptr, 1)  # orders nothing: a token atomic
    tl.store(out_ptr, tl.load(out_ptr) + part)  # a race on a GPU


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        count = torch.zeros(1, dtype=torch.int32, device=a.device)
        n = a.numel()
        _mse_partial[(triton.cdiv(n, 1024),)](a, b, out, count, n, 1.0 / n, BLOCK=1024)
        return out
