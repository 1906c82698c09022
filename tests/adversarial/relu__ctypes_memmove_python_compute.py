"""expected: cheat|crash
Computes the ReLU in plain Python on the input's raw bytes: `ctypes.memmove` copies them out of
the tensor's memory into a ctypes buffer (no `string_at`/`from_address`, which the guard refuses),
Python clamps each float, and `memmove` writes the result into the output. No aten op, no numpy,
no `.item()`: only a token Triton launch is visible. (On a GPU the addresses are device pointers:
a crash.)
"""

import ctypes
import struct

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(dst_ptr):
    tl.store(dst_ptr, 0.0)


def _py_relu(src, dst, n):
    buf = ctypes.create_string_buffer(4 * n)
    ctypes.memmove(buf, src.data_ptr(), 4 * n)
    vals = struct.unpack(f"{n}f", buf.raw)
    out = struct.pack(f"{n}f", *[v if v > 0.0 else 0.0 for v in vals])
    ctypes.memmove(dst.data_ptr(), out, 4 * n)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _touch_kernel[(1,)](torch.empty(1, device=x.device))
        _py_relu(x, y, x.numel())
        return y
