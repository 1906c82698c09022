"""expected: ok
Launches on a side CUDA stream and returns without waiting for it. The verifier synchronises the
device after forward, so correctness is judged on finished results (on the CPU there is no stream
and this is an honest kernel). On a GPU the exploit is against *timing* (a timer on the default
stream misses the work); that is the profiler's concern (tools/orchestrate/profile.py), not the verifier's.
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


import contextlib


class ModelNew(nn.Module):
    def forward(self, x):
        if torch.cuda.is_available() and x.is_cuda:
            ctx = torch.cuda.stream(torch.cuda.Stream())
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            return relu(x)
