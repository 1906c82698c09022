"""expected: mismatch
Right for exactly seven calls, then stale: the corpus verifies 3 trials (6 documented runs) and
the verifier adds an unannounced trial right after them (the 7th call), and a second one at a
random place only half the time. A kernel tuned to 2 x trials + 1 calls is caught only when the
second unannounced trial is drawn. (Nondeterministic under today's plan.)
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS = [0]
_LAST = []


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        _CALLS[0] += 1
        y = torch.empty_like(x)
        n = x.numel()
        if _CALLS[0] <= 7 or not _LAST:
            _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            _LAST[:] = [y.clone()]
        else:
            _copy_kernel[(triton.cdiv(n, 1024),)](_LAST[0], y, n, BLOCK=1024)
        return y
