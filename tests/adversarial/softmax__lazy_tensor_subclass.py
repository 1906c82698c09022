"""expected: cheat
Returns a torch.Tensor subclass whose values are only computed (by PyTorch) when something reads
it, i.e. when the harness copies the output, outside the audited forward. Outputs must be plain
tensors.
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


class LazySoftmax(torch.Tensor):
    @staticmethod
    def __new__(cls, src):
        t = torch.Tensor._make_subclass(cls, torch.empty_like(src))
        t._src = src.clone()
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        args = [torch.softmax(a._src, dim=-1) if isinstance(a, LazySoftmax) else a for a in args]
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def forward(self, x):
        touch(x)
        return LazySoftmax(x)
