# Expected status: compile_error. `tl.tanh` does not exist (tanh lives in libdevice, and the old
# `tl.libdevice` namespace is gone since Triton 2.1): the kernel fails while being compiled,
# a mistake LLMs trained on older Triton code make often.
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _linear_gelu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * stride_xm + ks[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + ks[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    z = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    y = 0.5 * z * (1.0 + tl.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))  # BUG
    tl.store(y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn, y,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        _linear_gelu_kernel[grid](
            x, w, b, y, M, N, K,
            x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        )
        return y
