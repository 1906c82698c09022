"""expected: ok
Honest: the Linear's weight re-laid out once in the constructor (`weight.t().contiguous()`, a
buffer in K x N order that a GEMM reads row by row), as optimised kernels often keep it. The
copy holds the same values as the reference's weight (same seed); no arithmetic is folded.
GELU (tanh form) computed in the epilogue from tl.exp.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_gelu_kernel(
    x_ptr, wt_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(
            x_ptr + rm[:, None] * K + rk[None, :],
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        w = tl.load(
            wt_ptr + rk[:, None] * N + rn[None, :],
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
    th = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    y = 0.5 * acc * (1.0 + th)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.register_buffer("weight_t", self.linear.weight.detach().t().contiguous())

    def forward(self, x):
        m, k = x.shape
        n = self.weight_t.shape[1]
        y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
        _linear_gelu_kernel[grid](
            x, self.weight_t, self.linear.bias, y, m, n, k, BM=32, BN=32, BK=32
        )
        return y
