"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


BATCH = 7
DIM1 = 129
DIM2 = 65
REDUCE_DIM = 1


@triton.jit
def triton_red_fused_sum_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 910
    r0_numel = 65
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x1 = ((xindex // 65) % 2)
    x0 = (xindex % 65)
    x2 = xindex // 130
    _tmp5 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    x4 = xindex
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_3 = r0_index
        tmp0 = r0_3 + 65*x1
        tmp1 = tl.full([1, 1], 129, tl.int32)
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (x0 + 65*r0_3 + 4225*x1 + 8385*x2), r0_mask & tmp2 & xmask, eviction_policy='evict_first', other=0.0)
        tmp4 = tl.broadcast_to(tmp3, [XBLOCK, R0_BLOCK])
        tmp6 = _tmp5 + tmp4
        _tmp5 = tl.where(r0_mask & xmask, tmp6, _tmp5)
    tmp5 = tl.sum(_tmp5, 1)[:, None]
    tl.store(out_ptr0 + (x4), tmp5, xmask)


@triton.jit
def triton_per_fused_sum_1(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 455
    r0_numel = 2
    R0_BLOCK: tl.constexpr = 2
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_2 = r0_index
    x0 = (xindex % 65)
    x1 = xindex // 65
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 65*r0_2 + 130*x1), xmask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(xmask, tmp1, 0)
    tmp4 = tl.sum(tmp3, 1)[:, None].to(tl.float32)
    tl.store(out_ptr0 + (x3), tmp4, xmask)


def call(args):
    arg0_1, = args
    device = arg0_1.device
    buf0 = torch.empty_strided((7, 1, 65, 2), (130, 910, 1, 65), dtype=torch.float32, device=device)
    triton_red_fused_sum_0[lambda meta: (triton.cdiv(910, meta['XBLOCK']),)](arg0_1, buf0, 910, 65, XBLOCK=8, R0_BLOCK=64, num_warps=4, num_stages=1)
    del arg0_1
    buf1 = torch.empty_strided((7, 1, 65), (65, 65, 1), dtype=torch.float32, device=device)
    triton_per_fused_sum_1[lambda meta: (triton.cdiv(455, meta['XBLOCK']),)](buf0, buf1, 455, 2, XBLOCK=256, num_warps=4, num_stages=1)
    del buf0
    return (buf1,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor):
        outputs = call([x])
        return outputs[0]
