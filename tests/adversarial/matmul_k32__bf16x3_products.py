"""expected: mismatch
A GEMM whose products are bf16x3, as 77 of 156 kernels of the merged H200 table computed their
convolutions (issue 35): each operand split into a bf16 high and a bf16 low part, three of the
four products summed in fp32 (low x low dropped), about 2^-17 relative error a product against
fp32's 2^-24. On randn inputs at K = 32 it is within atol = 1e-4 (0 of 6,365 elements outside in
10 draws, emulated) but the precision check finds it at the problem's own scale (about 1,100
elements past 64x their fp32 error); with the inputs x100 the tolerance is relative and 2-3% of
the outputs are outside it too. On the GPU the precision check had been skipped for outputs
over 128 MiB; its sample now covers any size (tests/test_scales_precision_sample.py).
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
        ah, bh = _bf16(a), _bf16(b)
        al, bl = _bf16(a - ah), _bf16(b - bh)
        acc += tl.dot(ah, bl, input_precision="ieee") + tl.dot(al, bh, input_precision="ieee")
        acc += tl.dot(ah, bh, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16)
        return c
