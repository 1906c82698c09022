"""Drafted by tools.inductor_draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Block sizes, grids and tensor sizes are fixed for the problem's sizes.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


BATCH = 50
DIM = 999


@triton.jit
def triton_red_fused_mean_pow_sub_0(in_ptr0, in_ptr1, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 7
    r0_numel = 7136
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp10 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = r0_1 + 7136*x0
        tmp1 = tl.full([1, 1], 49950, tl.int32)
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (((r0_1 + 7136*x0) % 49950)), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=0.0)
        tmp4 = tl.load(in_ptr1 + (((r0_1 + 7136*x0) % 49950)), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=0.0)
        tmp5 = tmp3 - tmp4
        tmp6 = tmp5 * tmp5
        tmp7 = tl.full(tmp6.shape, 0, tmp6.dtype)
        tmp8 = tl.where(tmp2, tmp6, tmp7)
        tmp9 = tl.broadcast_to(tmp8, [XBLOCK, R0_BLOCK])
        tmp11 = _tmp10 + tmp9
        _tmp10 = tl.where(r0_mask & xmask, tmp11, _tmp10)
    tmp10 = tl.sum(_tmp10, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp10, xmask)


@triton.jit
def triton_per_fused_mean_pow_sub_1(in_out_ptr0, in_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 7
    R0_BLOCK: tl.constexpr = 8
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = r0_index < r0_numel
    roffset = r0_offset
    rindex = r0_index
    r0_0 = r0_index
    tmp0 = tl.load(in_ptr0 + (r0_0), r0_mask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(r0_mask, tmp1, 0)
    tmp4 = tl.sum(tmp3, 1)[:, None].to(tl.float32)
    tmp5 = tl.full([1, 1], 49950.0, tl.float32)
    tmp6 = (tmp4 / tmp5)
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp6, None)


def call(args):
    arg0_1, arg1_1 = args
    device = arg0_1.device
    buf1 = torch.empty_strided((7,), (1,), dtype=torch.float32, device=device)
    triton_red_fused_mean_pow_sub_0[lambda meta: (triton.cdiv(7, meta['XBLOCK']),)](arg0_1, arg1_1, buf1, 7, 7136, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del arg0_1
    del arg1_1
    buf2 = torch.empty_strided((), (), dtype=torch.float32, device=device)
    buf3 = buf2
    del buf2
    triton_per_fused_mean_pow_sub_1[lambda meta: (triton.cdiv(1, meta['XBLOCK']),)](buf3, buf1, 1, 7, XBLOCK=1, num_warps=2, num_stages=1)
    del buf1
    return (buf3,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor):
        outputs = call([predictions, targets])
        return outputs[0]
