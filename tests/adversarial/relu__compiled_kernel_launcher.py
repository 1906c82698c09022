"""expected: ok
Honest (GPU): compiles the kernel once with `warmup` and launches the returned CompiledKernel
directly (`compiled[grid](...)`), never through JITFunction.run. Launches are counted at the
driver's launcher, so this is a launch.
requires: cuda
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.maximum(tl.load(x_ptr + offsets, mask=mask), 0.0), mask=mask)


@triton.jit
def _touch_kernel(src_ptr, dst_ptr):
    # a token launch: copies one element so that "a Triton kernel ran" is true
    tl.store(dst_ptr, tl.load(src_ptr))


def relu(x):
    y = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
    return y


def touch(x):
    scratch = torch.empty(1, dtype=x.dtype, device=x.device)
    _touch_kernel[(1,)](x, scratch)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)
        compiled = _relu_kernel.warmup(x, y, n, BLOCK_SIZE=1024, grid=grid)
        # CompiledKernel's launcher reads grid[0], grid[1] and grid[2]: a 1-tuple raised
        # IndexError there (H200, Triton 3.6, session 5: this honest kind was a runtime_error)
        grid = (grid[0], 1, 1)
        try:
            compiled[grid](x, y, n)
        except TypeError:  # Triton versions that keep constexprs in the launcher's arguments
            compiled[grid](x, y, n, 1024)
        return y
