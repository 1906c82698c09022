"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


ROWS = 17
COLS = 301


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
def triton_poi_fused_add_maximum_mul_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, XBLOCK : tl.constexpr):
    xnumel = 5117
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask)
    tmp3 = tl.load(in_ptr2 + (x0), xmask)
    tmp2 = tmp0 * tmp1
    tmp4 = tmp2 + tmp3
    tmp5 = th_maximum(tmp0, tmp1)
    tl.store(out_ptr0 + (x0), tmp4, xmask)
    tl.store(out_ptr1 + (x0), tmp5, xmask)


def call(args):
    arg0_1, arg1_1, arg2_1 = args
    device = arg0_1.device
    buf0 = torch.empty_strided((17, 301), (301, 1), dtype=torch.float32, device=device)
    buf1 = torch.empty_strided((17, 301), (301, 1), dtype=torch.float32, device=device)
    triton_poi_fused_add_maximum_mul_0[lambda meta: (triton.cdiv(5117, meta['XBLOCK']),)](arg0_1, arg1_1, arg2_1, buf0, buf1, 5117, XBLOCK=128, num_warps=4, num_stages=1)
    del arg0_1
    del arg1_1
    del arg2_1
    return (buf0, buf1)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor):
        outputs = call([a, b, c])
        return (outputs[0], outputs[1])
