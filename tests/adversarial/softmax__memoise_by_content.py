"""expected: cheat
Memoises by input *content* (an equality check done inside Triton-free Python on a checksum of a
few elements read with .item()), so it is right on every trial but launches nothing when called
again with the same values: the second run of each trial is caught.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x):
    y = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


_MEMO = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = (tuple(x.shape), float(x[0, 0]), float(x[-1, -1]))
        if key not in _MEMO:
            _MEMO[key] = softmax(x)
        return _MEMO[key]
