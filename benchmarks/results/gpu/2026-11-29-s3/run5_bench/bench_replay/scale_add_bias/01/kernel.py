# Expected status: mismatch. The broadcast index is the row (offset // F) instead of the
# feature (offset % F): scale and bias are read for the wrong elements. With 23 rows and 191
# features the row index never leaves the parameter vectors, so nothing faults; values are wrong.
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024


@triton.jit
def _scale_add_bias_kernel(x_ptr, scale_ptr, bias_ptr, y_ptr, n_elements, n_features,
                           BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    feature = offsets // n_features  # BUG: should be offsets % n_features
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.load(scale_ptr + feature, mask=mask)
    b = tl.load(bias_ptr + feature, mask=mask)
    tl.store(y_ptr + offsets, x * s + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _scale_add_bias_kernel[(triton.cdiv(n, BLOCK_SIZE),)](
            x, self.scale, self.bias, y, n, self.scale.numel(), BLOCK_SIZE=BLOCK_SIZE
        )
        return y
