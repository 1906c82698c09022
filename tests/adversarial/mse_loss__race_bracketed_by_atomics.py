"""expected: runtime_error|mismatch
A plain load + store accumulation across programs bracketed by two atomics on a common counter
(`tl.atomic_add(counter, 0)` before and after the access) that wait for nothing: on a GPU the
programs still run their load/store concurrently and lose updates. The race check excuses a
conflict where atomics on a common address could order it (the earlier program's atomic after
its access, the later one's before): here they are present but order nothing.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mse_partial(a_ptr, b_ptr, out_ptr, counter_ptr, n, inv_n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(a_ptr + offs, mask=mask, other=0.0) - tl.load(b_ptr + offs, mask=mask, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    tl.atomic_add(counter_ptr, 0)
    tl.store(out_ptr, tl.load(out_ptr) + part)  # a race on a GPU: nothing waits above
    tl.atomic_add(counter_ptr, 0)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        counter = torch.zeros(1, dtype=torch.int32, device=a.device)
        n = a.numel()
        _mse_partial[(triton.cdiv(n, 1024),)](a, b, out, counter, n, 1.0 / n, BLOCK=1024)
        return out
