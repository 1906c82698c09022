"""expected: mismatch
Right for the first four distinct input sets it is called with, stale afterwards: it counts
input sets, not calls (a fingerprint computed by a Triton kernel, one value read with `.item()`;
a repeated run's inputs do not count), so the number of runs a trial gets does not matter to
it. The corpus verifies 3 trials, and the parent adds one or two unannounced trials: four sets
when only the one right after the documented trials comes. Caught only if fresh inputs keep
coming past that point (unchecked calls before the last compared one).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_SEEN = {"sets": 0, "last_key": None, "last_out": None}


@triton.jit
def _fingerprint_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        idx = start + offs
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0) * (1.0 + (idx % 7).to(tl.float32))
    tl.store(out_ptr, tl.sum(acc, axis=0))


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
        n = x.numel()
        f = torch.empty(1, dtype=torch.float32, device=x.device)
        _fingerprint_kernel[(1,)](x, f, n, BLOCK=1024)
        key = f.item()
        if key != _SEEN["last_key"]:
            _SEEN["sets"] += 1
            _SEEN["last_key"] = key
        y = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        if _SEEN["sets"] <= 4 or _SEEN["last_out"] is None:
            _relu_kernel[grid](x, y, n, BLOCK=1024)
            _SEEN["last_out"] = y.clone()
        else:
            _copy_kernel[grid](_SEEN["last_out"], y, n, BLOCK=1024)
        return y
