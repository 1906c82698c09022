"""expected: ok
Honest: the sinusoidal positional-encoding table built in the constructor as the reference builds
it (sin and cos of an arange times exp-spaced frequencies: data-independent setup), the addition
done in Triton.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_pe_kernel(x_ptr, pe_ptr, y_ptr, n, per_batch, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    pe = tl.load(pe_ptr + offs % per_batch, mask=mask)
    tl.store(y_ptr + offs, x + pe, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(
            torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
        )
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        b, t, d = x.shape
        y = torch.empty_like(x)
        n = x.numel()
        pe = self.pe[:t].contiguous()
        _add_pe_kernel[(triton.cdiv(n, 256),)](x, pe, y, n, t * d, BLOCK=256)
        return y
