"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


BATCH = 19
HIDDEN = 257
EPS = 1e-5


@triton.jit
def triton_per_fused_native_layer_norm_0(in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 19
    r0_numel = 257
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
    tmp0 = tl.load(in_ptr0 + (r0_1 + 257*x0), r0_mask & xmask, other=0.0)
    tmp24 = tl.load(in_ptr1 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0)
    tmp26 = tl.load(in_ptr2 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(r0_mask & xmask, tmp1, 0)
    tmp4 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])
    tmp6 = tl.where(r0_mask & xmask, tmp4, 0)
    tmp7 = tl.sum(tmp6, 1)[:, None].to(tl.float32)
    tmp8 = tl.full([1, 1], 257, tl.int32)
    tmp9 = tmp8.to(tl.float32)
    tmp10 = (tmp7 / tmp9)
    tmp11 = tmp1 - tmp10
    tmp12 = tmp11 * tmp11
    tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
    tmp15 = tl.where(r0_mask & xmask, tmp13, 0)
    tmp16 = tl.sum(tmp15, 1)[:, None].to(tl.float32)
    tmp17 = tmp0 - tmp10
    tmp18 = tl.full([1, 1], 257.0, tl.float32)
    tmp19 = (tmp16 / tmp18)
    tmp20 = tl.full([1, 1], 1e-05, tl.float32)
    tmp21 = tmp19 + tmp20
    tmp22 = libdevice.rsqrt(tmp21)
    tmp23 = tmp17 * tmp22
    tmp25 = tmp23 * tmp24
    tmp27 = tmp25 + tmp26
    tl.store(out_ptr2 + (r0_1 + 257*x0), tmp27, r0_mask & xmask)


def call(args):
    arg0_1, arg1_1, arg2_1 = args
    device = arg0_1.device
    buf3 = torch.empty_strided((19, 257), (257, 1), dtype=torch.float32, device=device)
    triton_per_fused_native_layer_norm_0[lambda meta: (triton.cdiv(19, meta['XBLOCK']),)](arg2_1, arg0_1, arg1_1, buf3, 19, 257, XBLOCK=1, num_warps=4, num_stages=1)
    del arg0_1
    del arg1_1
    del arg2_1
    return (buf3,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps, elementwise_affine=True)
        # nn.LayerNorm starts at weight=1, bias=0, which would let a kernel that ignores the
        # affine part pass; random values make the weights matter.
        with torch.no_grad():
            self.ln.weight.copy_(torch.randn(hidden))
            self.ln.bias.copy_(torch.randn(hidden))

    def forward(self, x: torch.Tensor):
        outputs = call([self.ln.weight, self.ln.bias, x])
        return outputs[0]
