"""expected: cheat|mismatch
Launches a token kernel that leaves the output unwritten, and returns it inside a tuple
subclass that also holds an object whose `__del__` computes the ReLU with PyTorch: the tuple is
freed by the harness after forward returned and the audit closed, before the outputs reach the
judge. Nothing the candidate left behind may run between forward's return and the judge's read:
its return value lives until the judge has compared, and automatic garbage collection is off
in that window.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _token_kernel(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr))


class _Later:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __del__(self):
        with torch.no_grad():
            self.y.copy_(torch.relu(self.x))


class _Outputs(tuple):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _token_kernel[(1,)](x, y)
        out = _Outputs((y,))
        out.later = _Later(x, y)
        return out
