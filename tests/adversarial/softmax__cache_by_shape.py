"""expected: cheat
Computes once with Triton, then returns the cached tensor for every later call with the same
shape. The second run of trial 0 (same inputs) launches nothing -> "forward launched no Triton
kernel in N of its calls"; later trials would also mismatch (fresh inputs per trial).
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


_CACHE = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = tuple(x.shape)
        if key not in _CACHE:
            _CACHE[key] = softmax(x)
        return _CACHE[key]
