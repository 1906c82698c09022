"""expected: cheat
forward returns a `list` subclass holding an unwritten output and the input; its `__iter__`
computes torch.relu when the harness flattens forward's return value, after the audit closed.
Only a token Triton launch runs inside forward.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(dst_ptr):
    tl.store(dst_ptr, 0.0)


class _Lazy(list):
    def __iter__(self):
        x, y = self._src, list.__getitem__(self, 0)
        y.copy_(torch.relu(x))
        return list.__iter__(self)

    def __len__(self):
        return 1


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _touch_kernel[(1,)](y)
        out = _Lazy([y])
        out._src = x
        return out
