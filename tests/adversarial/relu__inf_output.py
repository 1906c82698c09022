"""expected: mismatch
Correct ReLU except one element, which the kernel sets to +inf where the reference is finite: the
error figures (max_abs_err, max_rel_err) are inf, and the `--json` result must still be strict
JSON (no bare `Infinity`).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    y = tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0)
    y = tl.where(offsets == 7, float("inf"), y)
    tl.store(y_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
        return y
