"""KernelBench level2/14_Gemm_Divide_Sum_Scaling as an honest fp32 Triton kernel: a tiled GEMM
(`tl.dot`, PRECISION below) whose epilogue sums each tile's columns, then a second kernel that
adds the per-tile partial sums in a fixed order and scales. Another summation order than
cuBLAS + torch.sum, so a few of the 1024 outputs (those near zero) differ from the fp32
reference by more than 1e-4 of them: the case of the judge's fp64 rule
(docs/verification.md). `benchmarks/gpu_fp64_rule.sh` verifies it with PRECISION "ieee" and
"tf32x3"."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

PRECISION = "ieee"


@triton.jit
def _gemm_rowsum_kernel(
    x_ptr,
    w_ptr,
    part_ptr,
    M,
    N,
    K,
    PREC: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(
            x_ptr + rm[:, None] * K + kk[None, :],
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        # W is (N, K): the tile b[k, n] = W[n, k]
        b = tl.load(
            w_ptr + rn[None, :] * K + kk[:, None],
            mask=(rn[None, :] < N) & (kk[:, None] < K),
            other=0.0,
        )
        acc += tl.dot(a, b, input_precision=PREC)
    part = tl.sum(tl.where(rn[None, :] < N, acc, 0.0), axis=1)
    tl.store(part_ptr + pid_n * M + rm, part, mask=rm < M)


@triton.jit
def _sum_parts_kernel(part_ptr, out_ptr, M, n_parts, scale, BLOCK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for p in range(0, n_parts):
        acc += tl.load(part_ptr + p * M + rm, mask=rm < M, other=0.0)
    tl.store(out_ptr + rm, acc * scale, mask=rm < M)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = x.contiguous()
        w = self.weight.contiguous()
        m, k = x.shape
        n = w.shape[0]
        bm, bn, bk = 64, 128, 32
        n_parts = triton.cdiv(n, bn)
        part = torch.empty((n_parts, m), device=x.device, dtype=torch.float32)
        _gemm_rowsum_kernel[(triton.cdiv(m, bm), n_parts)](
            x,
            w,
            part,
            m,
            n,
            k,
            PREC=PRECISION,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            num_warps=4,
            num_stages=3,
        )
        out = torch.empty((m, 1), device=x.device, dtype=torch.float32)
        # (sum of y / 2) * scaling_factor: dividing by 2 is exact, so one product by scale / 2
        _sum_parts_kernel[(triton.cdiv(m, 256),)](
            part, out, m, n_parts, self.scaling_factor / 2, BLOCK=256
        )
        return out
