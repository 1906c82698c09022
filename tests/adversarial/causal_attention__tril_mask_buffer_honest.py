"""expected: ok
Honest, minGPT style: the causal mask is a buffer made in the constructor with
`torch.tril(torch.ones(T, T))` (data-independent setup, like the reference's own), and the
Triton kernel reads it to mask the scores. One program per (batch x head, query row).
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _attn_row_kernel(
    q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, T, D, scale, BT: tl.constexpr, BD: tl.constexpr
):
    bh = tl.program_id(0)
    i = tl.program_id(1)
    base = bh * T * D
    d = tl.arange(0, BD)
    t = tl.arange(0, BT)
    dm = d < D
    tm = t < T
    q = tl.load(q_ptr + base + i * D + d, mask=dm, other=0.0)
    kv_mask = tm[:, None] & dm[None, :]
    k = tl.load(k_ptr + base + t[:, None] * D + d[None, :], mask=kv_mask, other=0.0)
    s = tl.sum(k * q[None, :], axis=1) * scale
    keep = tl.load(mask_ptr + i * T + t, mask=tm, other=0.0)
    s = tl.where((keep != 0.0) & tm, s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=0))
    p = p / tl.sum(p, axis=0)
    v = tl.load(v_ptr + base + t[:, None] * D + d[None, :], mask=kv_mask, other=0.0)
    tl.store(o_ptr + base + i * D + d, tl.sum(p[:, None] * v, axis=0), mask=dm)


class ModelNew(nn.Module):
    def __init__(self, seq):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, q, k, v):
        b, h, t, d = q.shape
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        mask = self.bias[0, 0, :t, :t].contiguous()
        o = torch.empty_like(q)
        _attn_row_kernel[(b * h, t)](
            q,
            k,
            v,
            mask,
            o,
            t,
            d,
            1.0 / math.sqrt(d),
            BT=triton.next_power_of_2(t),
            BD=triton.next_power_of_2(d),
        )
        return o
