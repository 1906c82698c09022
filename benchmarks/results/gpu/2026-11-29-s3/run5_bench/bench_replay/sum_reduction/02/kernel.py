# Expected status: shape_mismatch. The sums are right but the output is (B, N): keepdim=True
# was ignored, the problem expects (B, 1, N).
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_R = 32
BLOCK_N = 64


@triton.jit
def _sum_reduction_kernel(x_ptr, y_ptr, R, N, stride_xb, stride_xr, stride_yb,
                          BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_R, BLOCK_N), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < R) & (cols[None, :] < N)
        acc += tl.load(x_ptr + pid_b * stride_xb + rows[:, None] * stride_xr + cols[None, :],
                       mask=mask, other=0.0)
    tl.store(y_ptr + pid_b * stride_yb + cols, tl.sum(acc, axis=0), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        B, R, N = x.shape
        y = torch.empty((B, N), dtype=x.dtype, device=x.device)  # BUG: should be (B, 1, N)
        grid = (B, triton.cdiv(N, BLOCK_N))
        _sum_reduction_kernel[grid](x, y, R, N, x.stride(0), x.stride(1), y.stride(0),
                                    BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return y
