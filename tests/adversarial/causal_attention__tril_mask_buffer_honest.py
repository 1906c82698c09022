"""expected: ok
Honest, minGPT style: the causal mask is a buffer made in the constructor with
`torch.tril(torch.ones(T, T))` (data-independent setup, like the reference's own), and the
Triton kernel reads it to mask the scores. One program per (batch x head), the whole T x T
score tile at once (few programs: the interpreter's cost is per program).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _attn_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, T, D, scale, BT: tl.constexpr,
                 BD: tl.constexpr):
    base = tl.program_id(0) * T * D
    t = tl.arange(0, BT)
    d = tl.arange(0, BD)
    tile = (t[:, None] < T) & (d[None, :] < D)
    offs = base + t[:, None] * D + d[None, :]
    q = tl.load(q_ptr + offs, mask=tile, other=0.0)
    k = tl.load(k_ptr + offs, mask=tile, other=0.0)
    v = tl.load(v_ptr + offs, mask=tile, other=0.0)
    s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * scale  # (query, key)
    inside = (t[:, None] < T) & (t[None, :] < T)
    keep = tl.load(mask_ptr + t[:, None] * T + t[None, :], mask=inside, other=0.0)
    s = tl.where((keep != 0.0) & inside, s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    o = tl.sum(p[:, :, None] * v[None, :, :], axis=1)
    tl.store(o_ptr + offs, o, mask=tile)


class ModelNew(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, q, k, v):
        b, h, t, d = q.shape
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        mask = self.bias[0, 0, :t, :t].contiguous()
        o = torch.empty_like(q)
        scale = 1.0 / math.sqrt(d)
        bt, bd = triton.next_power_of_2(t), triton.next_power_of_2(d)
        _attn_kernel[(b * h,)](q, k, v, mask, o, t, d, scale, BT=bt, BD=bd)
        return o
