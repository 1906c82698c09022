"""expected: mismatch
Returns torch.empty_like(x) without writing it, hoping the allocator hands back the buffer that
held the reference's result (on a GPU's caching allocator it often does). The harness fills fresh
allocations with NaN, and the first run happens before the reference ran.
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
        touch(x)
        return torch.empty_like(x)
