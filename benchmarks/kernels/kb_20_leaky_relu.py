"""LeakyReLU for KernelBench level1/20_LeakyReLU.py (4096 x 393216 fp32, 6.4 GB in and out): a
hand-written real-size case for the verifier and the timer. BLOCK 4096 with 8 warps: a
memory-bound elementwise kernel; on the CPU interpreter few large programs are faster."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_relu_kernel(x_ptr, out_ptr, n, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x >= 0, x, x * slope), mask=mask)


def leaky_relu(x: torch.Tensor, slope: float) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    block = 4096 if x.is_cuda else 1 << 20
    _leaky_relu_kernel[(triton.cdiv(n, block),)](x, out, n, slope, BLOCK=block, num_warps=8)
    return out


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return leaky_relu(x, self.negative_slope)
