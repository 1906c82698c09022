"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


BATCH = 37
DIM = 333


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
def th_max2(a, dim):
    return tl.reduce(a, dim, th_maximum)


@triton.jit
def triton_per_fused__softmax_exp_prepare_softmax_online_sub_0(in_ptr0, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 37
    r0_numel = 333
    R0_BLOCK: tl.constexpr = 512
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = r0_index < r0_numel
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 333*x0), r0_mask & xmask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])
    tmp5 = tl.where(r0_mask & xmask, tmp3, float("-inf"))
    tmp6 = th_max2(tmp5, 1)[:, None].to(tl.float32)
    tmp7 = tmp1 - tmp6
    tmp8 = libdevice.exp(tmp7)
    tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
    tmp11 = tl.where(r0_mask & xmask, tmp9, 0)
    tmp12 = tl.sum(tmp11, 1)[:, None].to(tl.float32)
    tmp13 = tmp0 - tmp6
    tmp14 = libdevice.exp(tmp13)
    tmp15 = (tmp14 / tmp12)
    tl.store(out_ptr2 + (r0_1 + 333*x0), tmp15, r0_mask & xmask)


def call(args):
    arg0_1, = args
    device = arg0_1.device
    buf2 = torch.empty_strided((37, 333), (333, 1), dtype=torch.float32, device=device)
    triton_per_fused__softmax_exp_prepare_softmax_online_sub_0[lambda meta: (triton.cdiv(37, meta['XBLOCK']),)](arg0_1, buf2, 37, 333, XBLOCK=1, num_warps=4, num_stages=1)
    del arg0_1
    return (buf2,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        outputs = call([x])
        return outputs[0]
