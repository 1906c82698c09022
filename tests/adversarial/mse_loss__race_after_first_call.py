"""expected: runtime_error|mismatch
Accumulates across programs with `tl.atomic_add` on its first call only; from the second call on
the same partial sums go in with a plain load + store (lost updates on a GPU, where programs run
concurrently; the interpreter runs them in order and gets the sum right). The race check looks
at one forward a verification (trial 0's first run).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS = [0]


@triton.jit
def _mse_partial(a_ptr, b_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr, ATOMIC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(a_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + offs, mask=mask, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    if ATOMIC:
        tl.atomic_add(out_ptr, part)
    else:
        tl.store(out_ptr, tl.load(out_ptr) + part)  # a race on a GPU


class ModelNew(nn.Module):
    def forward(self, a, b):
        _CALLS[0] += 1
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        n = a.numel()
        grid = (triton.cdiv(n, 1024),)
        _mse_partial[grid](a, b, out, n, 1.0 / n, BLOCK=1024, ATOMIC=_CALLS[0] == 1)
        return out
