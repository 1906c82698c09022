"""expected: cheat|mismatch
A cache keyed by the input's data pointer (a benchmark exploit: timing loops reuse one buffer).
The verifier clones inputs for every run, so a pointer is either new (the kernel runs) or reused by
the allocator for *different* values: a hit returns a stale result (mismatch) and a run without a
launch is a cheat. Which of the two happens first depends on the allocator.
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


def relu(x):
    y = torch.empty_like(x)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK_SIZE=1024)
    return y


_CACHE = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key not in _CACHE:
            _CACHE[key] = relu(x)
        return _CACHE[key]
