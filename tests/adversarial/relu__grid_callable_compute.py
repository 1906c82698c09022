"""expected: cheat
Computes with PyTorch inside the launch's grid callable, which runs while the harness has its
modes suspended for the kernel. The profiler sees the aten ops inside forward regardless.
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


class ModelNew(nn.Module):
    def forward(self, x):
        box = {}

        def grid(meta):
            box["y"] = torch.relu(x)
            return (1,)

        scratch = torch.empty(1, dtype=x.dtype, device=x.device)
        _touch_kernel[grid](x, scratch)
        return box["y"]
