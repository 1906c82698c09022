"""expected: mismatch
Computes an fp32 softmax in fp16 inside the kernel: about 3 significant digits, far outside the
fp32 tolerance (1e-4) on rows dominated by one element.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_fp16_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = (x - tl.max(x, axis=0)).to(tl.float16)
    e = tl.exp(x.to(tl.float32)).to(tl.float16)
    s = tl.sum(e.to(tl.float32), axis=0).to(tl.float16)
    tl.store(y_ptr + row * n_cols + cols, (e / s).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _softmax_fp16_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
