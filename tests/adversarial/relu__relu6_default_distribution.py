"""expected: mismatch
options: {"input_scales": [100.0]}
Computes min(max(x, 0), 6): identical to ReLU for randn inputs (|x| < 6 with near certainty), so
every trial at the problem's own scale accepts it. The scale trial (VerifyOptions.input_scales, an
extra trial with inputs x100) catches it; this corpus entry asks for it explicitly, which the
default protocol also does since issue 35 (relu__clamps_at_six_default_protocol).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu6_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, tl.minimum(tl.maximum(x, 0.0), 6.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu6_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
