"""expected: cheat
Replaces triton's JITFunction.run / InterpretedFunction.run at import (to fake launches or run
PyTorch under the harness's "inside a kernel" suspension). Caught by the integrity snapshot.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(src_ptr, dst_ptr):
    # a token launch: copies one element so that "a Triton kernel ran" is true
    tl.store(dst_ptr, tl.load(src_ptr))


def touch(x):
    scratch = torch.empty(1, dtype=x.dtype, device=x.device)
    _touch_kernel[(1,)](x, scratch)


from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

_orig_jit, _orig_interp = JITFunction.run, InterpretedFunction.run
JITFunction.run = lambda self, *a, **k: _orig_jit(self, *a, **k)
InterpretedFunction.run = lambda self, *a, **k: _orig_interp(self, *a, **k)


class ModelNew(nn.Module):
    def forward(self, x):
        touch(x)
        return torch.relu(x)
