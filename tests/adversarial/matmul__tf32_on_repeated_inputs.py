"""expected: mismatch
An exact ("ieee") fp32 GEMM whenever its inputs are new, a TF32 one (`tl.dot`'s default:
operands rounded to 10 mantissa bits) when called again with the same values, as a trial's
second run is. A repeat is recognised by a checksum a Triton kernel computes (two values read
with `.item()`).
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
        idx = start + offs
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0) * (1.0 + idx.to(tl.float32) * 1e-3)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    TF32: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            a_ptr + rm[:, None] * K + rk[None, :],
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * N + rn[None, :],
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        if TF32:
            acc += tl.dot(a, b)
        else:
            acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _fingerprint(a, b):
    s = torch.empty(2, dtype=torch.float32, device=a.device)
    _checksum_kernel[(1,)](a, s, a.numel(), BLOCK=2048)
    _checksum_kernel[(1,)](b, s[1:], b.numel(), BLOCK=2048)
    return s[0].item(), s[1].item()


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = _fingerprint(a, b)
        repeat = key == _LAST[0]
        _LAST[0] = key
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
        _matmul_kernel[grid](a, b, c, m, n, k, BM=32, BN=32, BK=32, TF32=repeat)
        return c
