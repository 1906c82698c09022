"""expected: mismatch
A systematic bf16 accumulator: the fp32 products of each K block summed exactly, but the running
sum carried between blocks as two bf16 words (high + low: 16 significant bits instead of fp32's
24), rounded after every block. On randn inputs at K = 32 it is within atol = 1e-4 (0 elements
outside in 10 draws, emulated) but the precision check finds it at the problem's own scale
(about 100 elements past 64x their fp32 error); with the inputs x100 0.5-1% of the outputs are
outside the tolerance too.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bf16(x):
    # x rounded to bf16 (to nearest, ties to even) and kept in fp32: its top 16 bits
    u = x.to(tl.uint32, bitcast=True)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.to(tl.float32, bitcast=True)


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
        hi = _bf16(acc)
        acc = hi + _bf16(acc - hi)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16)
        return c
