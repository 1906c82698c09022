"""expected: ok
Honest: a constructor that does what real modules do before any input exists: a constant table
built from Python values (`torch.tensor(list)`), parameters initialised with torch.nn.init
(kaiming, normal, trunc_normal) and a scalar read back with `.item()`. The constructor is
audited like forward, but initialising parameters and building constants is not compute.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.tensor([math.cos(i / 16) for i in range(16)]))
        self.unused = nn.Parameter(torch.empty(8, 8))
        nn.init.kaiming_uniform_(self.unused, a=math.sqrt(5))
        self.other = nn.Parameter(torch.empty(8))
        nn.init.trunc_normal_(self.other, std=0.02)
        self.scale = float(self.table[0].item())

    def forward(self, x):
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
