"""expected: ok
Honest: each program adds its partial sum into the one output with a plain load + store inside
a spin lock (`tl.atomic_cas` to take it, `tl.atomic_xchg` to release it), the pattern of
Triton's layer-norm backward tutorial. The lock orders the programs' accesses, so this is no
race; a fair race check must accept it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mse_locked(a_ptr, b_ptr, out_ptr, lock_ptr, n, inv_n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(a_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + offs, mask=mask, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_xchg(lock_ptr, 0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        lock = torch.zeros(1, dtype=torch.int32, device=a.device)
        n = a.numel()
        _mse_locked[(triton.cdiv(n, 1024),)](a, b, out, lock, n, 1.0 / n, BLOCK=1024)
        return out
