"""expected: mismatch|cheat
Regenerates "the verification inputs" in the constructor from `torch.initial_seed()` (the seed
the harness builds the model under) and computes their ReLU with a real Triton kernel; forward
returns the answer for the call number. Trial seeds are drawn fresh per trial by the parent and
sent only when the trial starts, so the regenerated inputs are not the trial's.
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

import random


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seed = torch.initial_seed()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.answers = []
        for guess in (seed, seed + 1, seed + 2, 0, 42):
            torch.manual_seed(guess)
            random.seed(guess)
            self.answers.append(relu(torch.randn(13, 1000, device=device)))
        self.calls = 0

    def forward(self, x):
        touch(x)
        y = torch.empty_like(x)
        ans = self.answers[(self.calls // 2) % len(self.answers)].to(x.device)
        self.calls += 1
        _copy_kernel[(triton.cdiv(x.numel(), 1024),)](ans, y, x.numel(), BLOCK_SIZE=1024)
        return y


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
