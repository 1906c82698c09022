"""expected: mismatch
fp32-exact whenever its inputs are new; when called again with the same values (a trial's second
run repeats the first's inputs) it rounds outputs below 0.15 through fp16, inside atol 1e-4. It
recognises a repeat by a checksum of the input that a Triton kernel computes (one value read
with `.item()`). The precision check looks at each trial's first run only.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LAST = [None]


@triton.jit
def _checksum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        v = tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
        acc += v * (1.0 + (start + offs).to(tl.float32) * 1e-3)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, ROUND: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    if ROUND:
        y = tl.where(y < 0.15, y.to(tl.float16).to(tl.float32), y)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        s = torch.empty(1, dtype=torch.float32, device=x.device)
        _checksum_kernel[(1,)](x, s, x.numel(), BLOCK=4096)
        key = s.item()
        repeat = key == _LAST[0]
        _LAST[0] = key
        y = torch.empty_like(x)
        block = triton.next_power_of_2(x.shape[1])
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=block, ROUND=repeat)
        return y
