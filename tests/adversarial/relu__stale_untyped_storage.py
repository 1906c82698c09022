"""expected: mismatch
Like relu__stale_memory, but allocates through torch.UntypedStorage, which the poisoning does not
see. Still caught: the candidate's first run of every trial happens before the reference runs, so
no stale buffer can hold the right answer.
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
        storage = torch.UntypedStorage(x.numel() * x.element_size(), device=x.device)
        return torch.tensor([], dtype=x.dtype, device=x.device).set_(storage).view(x.shape)
