"""expected: ok
Honest: forward builds a closure that captures the output and launches the kernel, and calls it
through a lambda and `functools.partial` (the kernel launch is one level removed from forward).
"""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def _launcher(kernel, rows, block):
    def launch(x, y, n_cols):
        kernel[(rows,)](x, y, n_cols, BLOCK=block)
        return y

    return launch


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        launch = _launcher(_softmax_kernel, x.shape[0], triton.next_power_of_2(x.shape[1]))
        run = functools.partial(launch, x, y)
        return (lambda: run(x.shape[1]))()
