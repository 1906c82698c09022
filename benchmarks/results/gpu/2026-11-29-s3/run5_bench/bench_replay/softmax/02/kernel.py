# Expected status: mismatch. An online (single-pass) softmax over 128-column chunks that forgets
# to rescale the running denominator when the running max grows: the correct update is
# d = d * exp(m_old - m_new) + sum(exp(x - m_new)). Rows whose max sits in a later chunk get a
# denominator inflated by stale exp(x - m_old) terms (the inputs are scaled by 30, so by a lot).
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 128


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, row_stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * row_stride
    m = -float("inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(base + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d + tl.sum(tl.exp(x - m_new), axis=0)  # BUG: d must first be scaled by exp(m - m_new)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(base + cols, mask=mask, other=-float("inf"))
        tl.store(y_ptr + row * row_stride + cols, tl.exp(x - m) / d, mask=mask)


def softmax(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax(x)
