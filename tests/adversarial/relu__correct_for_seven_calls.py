"""expected: mismatch|cheat
Right for exactly seven calls, then stale: the corpus verifies 3 trials (6 documented runs) and
the verifier adds an unannounced trial right after them (the 7th call), and a second one at a
random place only half the time. Before issue 34's fix it was caught only when that second one
was drawn (ok about half the time); now at least one unchecked call on fresh inputs
(`tools.orchestrate.verify_options.unchecked_calls`) comes before the first unannounced trial's run, so the
last compared call is the 8th or later every time. Where the stale call is a trial's second run
(unchecked calls before an early unannounced trial moved it there), the repeated-work check's
`cheat` comes first.
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
