# Expected status: mismatch. The kernel reduces one fixed block of 128 rows and has no loop,
# assuming the reduced dimension fits: with DIM1 = 129 the last row is silently dropped
# (masked out), so every output misses one term.
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_R = 128
BLOCK_N = 64


@triton.jit
def _sum_reduction_kernel(x_ptr, y_ptr, R, N, stride_xb, stride_xr, stride_yb,
                          BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_R)  # BUG: no loop over R in steps of BLOCK_R
    mask = (rows[:, None] < R) & (cols[None, :] < N)
    x = tl.load(x_ptr + pid_b * stride_xb + rows[:, None] * stride_xr + cols[None, :],
                mask=mask, other=0.0)
    tl.store(y_ptr + pid_b * stride_yb + cols, tl.sum(x, axis=0), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        B, R, N = x.shape
        y = torch.empty((B, 1, N), dtype=x.dtype, device=x.device)
        grid = (B, triton.cdiv(N, BLOCK_N))
        _sum_reduction_kernel[grid](x, y, R, N, x.stride(0), x.stride(1), y.stride(0),
                                    BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return y
