"""Drafted by tools.draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Sizes and strides are read from the inputs at run time.
Fixed or assumed (Inductor specialised them): x.shape[1]*x.shape[0] <= 2**31 - 1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def libdevice_expm1(x):
    return tl.where(tl.abs(x) < 1e-5, x + 0.5 * x * x, tl.exp(x) - 1.0)



batch_size = 4096
dim = 393216


@triton.jit
def triton_poi_fused_elu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.full([1], 0.0, tl.float32)
    tmp2 = tmp0 > tmp1
    tmp3 = tl.full([1], 1.0507009873554805, tl.float32)
    tmp4 = tmp0 * tmp3
    tmp5 = tl.full([1], 1.0, tl.float32)
    tmp6 = tmp0 * tmp5
    tmp7 = libdevice_expm1(tmp6)
    tmp8 = tl.full([1], 1.7580993408473766, tl.float32)
    tmp9 = tmp7 * tmp8
    tmp10 = tl.where(tmp2, tmp4, tmp9)
    tl.store(out_ptr0 + (x0), tmp10, xmask)


def call(args):
    arg0_1, arg1_1, arg2_1 = args
    device = arg2_1.device
    s77 = arg0_1
    s27 = arg1_1
    buf0 = torch.empty_strided((s77, s27), (s27, 1), dtype=torch.float32, device=device)
    triton_poi_fused_elu_0_xnumel = s27 * s77
    triton_poi_fused_elu_0[lambda meta: (triton.cdiv(triton_poi_fused_elu_0_xnumel, meta['XBLOCK']),)](arg2_1, buf0, triton_poi_fused_elu_0_xnumel, XBLOCK=1024, num_warps=4, num_stages=1)
    del arg2_1
    return (buf0,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        outputs = call([x.shape[0], x.shape[1], x])
        return outputs[0]
