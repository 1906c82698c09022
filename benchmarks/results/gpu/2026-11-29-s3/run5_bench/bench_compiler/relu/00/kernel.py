"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


BATCH = 13
DIM = 1000


# Helpers copied from torch/_inductor/runtime/triton_helpers.py, or written for the
# libdevice calls the Triton interpreter cannot run.
@triton.jit
def th_promote_to_tensor(x):
    # Addition promotes to tensor for us
    return x + tl.zeros((1,), tl.int1)


@triton.jit
def th_is_floating(x):
    return th_promote_to_tensor(x).dtype.is_floating()


@triton.jit
def th_maximum(a, b):
    mask = a > b
    if th_is_floating(a):
        mask |= a != a
    return tl.where(mask, a, b)


@triton.jit
def triton_poi_fused_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 13000
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.full([1], 0, tl.int32)
    tmp2 = th_maximum(tmp1, tmp0)
    tl.store(out_ptr0 + (x0), tmp2, xmask)


def call(args):
    arg0_1, = args
    device = arg0_1.device
    buf0 = torch.empty_strided((13, 1000), (1000, 1), dtype=torch.float32, device=device)
    triton_poi_fused_relu_0[lambda meta: (triton.cdiv(13000, meta['XBLOCK']),)](arg0_1, buf0, 13000, XBLOCK=128, num_warps=4, num_stages=1)
    del arg0_1
    return (buf0,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        outputs = call([x])
        return outputs[0]
