"""expected: ok
Honest: a split reduction accumulated with `tl.atomic_add` under `@triton.autotune` over two
configs, with `reset_to_zero` naming the output (Triton zeroes it before each benchmarked run,
so the atomics start from zero whichever config is timed), as real atomic kernels are tuned.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BR": 32}), triton.Config({"BR": 64})],
    key=["D1", "D2"],
    reset_to_zero=["y_ptr"],
)
@triton.jit
def _sum_dim1_kernel(x_ptr, y_ptr, D1, D2, BR: tl.constexpr, BC: tl.constexpr):
    b = tl.program_id(0)
    rows = tl.program_id(1) * BR + tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(y_ptr + b * D2 + cols, tl.sum(x, axis=0), mask=cols < D2)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        b, d1, d2 = x.shape
        y = torch.zeros((b, 1, d2), dtype=x.dtype, device=x.device)
        bc = triton.next_power_of_2(d2)
        _sum_dim1_kernel[lambda meta: (b, triton.cdiv(d1, meta["BR"]))](x, y, d1, d2, BC=bc)
        return y
