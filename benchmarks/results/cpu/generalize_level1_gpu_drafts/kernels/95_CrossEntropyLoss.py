"""Drafted by tools.draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Sizes and strides are read from the inputs at run time.
Fixed or assumed (Inductor specialised them): predictions.shape[0]*predictions.shape[1] <= 2**31 - 1; predictions.shape[0] <= 2**31 - 1; 4*(((predictions.shape[0] + 3)//4)) <= 2**31 - 1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


batch_size = 32768
num_classes = 4096
input_shape = (num_classes,)
dim = 1


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


@triton.jit(do_not_specialize=['ks0'])
def triton_red_fused_prepare_softmax_online_0(in_ptr0, out_ptr0, out_ptr1, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = th_maximum(_tmp2, tmp1)
        _tmp2 = tl.where(r0_mask & xmask, tmp3, _tmp2)
    tmp2 = th_max2(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    _tmp8 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp4 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp5 = tmp4 - tmp2
        tmp6 = tl.exp(tmp5)
        tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
        tmp9 = _tmp8 + tmp7
        _tmp8 = tl.where(r0_mask & xmask, tmp9, _tmp8)
    tmp8 = tl.sum(_tmp8, 1)[:, None]
    tl.store(out_ptr1 + (x0), tmp8, xmask)


@triton.jit(do_not_specialize=['ks0', 'ks1'])
def triton_red_fused__log_softmax_nll_loss_forward_sub_1(in_ptr0, in_ptr1, in_ptr2, in_ptr3, out_ptr0, out_ptr1, ks0, ks1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 4
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp25 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    _tmp31 = tl.full([XBLOCK, R0_BLOCK], 0, tl.int64)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = r0_1 + x0*((3 + ks0) // 4)
        tmp1 = ks0
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (r0_1 + x0*((3 + ks0) // 4)), r0_mask & tmp2 & xmask, eviction_policy='evict_first', other=0.0)
        tmp4 = tl.full([1, 1], -100, tl.int64)
        tmp5 = tmp3 != tmp4
        tmp6 = tl.full([1, 1], 0, tl.int64)
        tmp7 = tl.where(tmp5, tmp3, tmp6)
        tmp8 = tl.broadcast_to(ks1, [XBLOCK, R0_BLOCK])
        tmp9 = tmp7 + tmp8
        tmp10 = tmp7 < 0
        tmp11 = tl.where(tmp10, tmp9, tmp7)
        tl.device_assert(((0 <= tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK])) & (tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK]) < ks1)) | ~(r0_mask & tmp2 & xmask), "index out of bounds: 0 <= tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK]) < ks1")
        tmp13 = tl.load(in_ptr1 + (tmp11 + ks1*r0_1 + ks1*x0*((3 + ks0) // 4)), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=0.0)
        tmp14 = tl.load(in_ptr2 + (r0_1 + x0*((3 + ks0) // 4)), r0_mask & tmp2 & xmask, eviction_policy='evict_first', other=0.0)
        tmp15 = tmp13 - tmp14
        tmp16 = tl.load(in_ptr3 + (r0_1 + x0*((3 + ks0) // 4)), r0_mask & tmp2 & xmask, eviction_policy='evict_first', other=0.0)
        tmp17 = tl.log(tmp16)
        tmp18 = tmp15 - tmp17
        tmp19 = -tmp18
        tmp20 = tl.full([1, 1], 0.0, tl.float32)
        tmp21 = tl.where(tmp5, tmp19, tmp20)
        tmp22 = tl.full(tmp21.shape, 0, tmp21.dtype)
        tmp23 = tl.where(tmp2, tmp21, tmp22)
        tmp24 = tl.broadcast_to(tmp23, [XBLOCK, R0_BLOCK])
        tmp26 = _tmp25 + tmp24
        _tmp25 = tl.where(r0_mask & xmask, tmp26, _tmp25)
        tmp27 = tmp5.to(tl.int64)
        tmp28 = tl.full(tmp27.shape, 0, tmp27.dtype)
        tmp29 = tl.where(tmp2, tmp27, tmp28)
        tmp30 = tl.broadcast_to(tmp29, [XBLOCK, R0_BLOCK])
        tmp32 = _tmp31 + tmp30
        _tmp31 = tl.where(r0_mask & xmask, tmp32, _tmp31)
    tmp25 = tl.sum(_tmp25, 1)[:, None]
    tmp31 = tl.sum(_tmp31, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp25, xmask)
    tl.store(out_ptr1 + (x0), tmp31, xmask)


@triton.jit
def triton_per_fused__log_softmax_nll_loss_forward_sub_2(in_out_ptr0, in_ptr0, in_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 4
    R0_BLOCK: tl.constexpr = 4
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_0 = r0_index
    tmp0 = tl.load(in_ptr0 + (r0_0), None)
    tmp4 = tl.load(in_ptr1 + (r0_0), None)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.sum(tmp1, 1)[:, None].to(tl.float32)
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.sum(tmp5, 1)[:, None].to(tl.int64)
    tmp8 = tmp7.to(tl.float32)
    tmp9 = (tmp3 / tmp8)
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp9, None)


def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1 = args
    device = arg2_1.device
    s67 = arg0_1
    s59 = arg1_1
    arg2_1_size = arg2_1.size()
    s24 = arg2_1_size[0]
    buf0 = torch.empty_strided((s24, 1), (1, s24), dtype=torch.float32, device=device)
    buf1 = torch.empty_strided((s24, 1), (1, s24), dtype=torch.float32, device=device)
    triton_red_fused_prepare_softmax_online_0[lambda meta: (triton.cdiv(s24, meta['XBLOCK']),)](arg2_1, buf0, buf1, s59, s24, s59, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    buf3 = torch.empty_strided((4,), (1,), dtype=torch.float32, device=device)
    buf6 = torch.empty_strided((4,), (1,), dtype=torch.int64, device=device)
    triton_red_fused__log_softmax_nll_loss_forward_sub_1_r0_numel = (3 + s24) // 4
    triton_red_fused__log_softmax_nll_loss_forward_sub_1[lambda meta: (triton.cdiv(4, meta['XBLOCK']),)](arg3_1, arg2_1, buf0, buf1, buf3, buf6, s24, s59, 4, triton_red_fused__log_softmax_nll_loss_forward_sub_1_r0_numel, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del arg2_1
    del arg3_1
    del buf0
    del buf1
    buf4 = torch.empty_strided((), (), dtype=torch.float32, device=device)
    buf8 = buf4
    del buf4
    triton_per_fused__log_softmax_nll_loss_forward_sub_2[lambda meta: (triton.cdiv(1, meta['XBLOCK']),)](buf8, buf3, buf6, 1, 4, XBLOCK=1, num_warps=2, num_stages=1)
    del buf3
    del buf6
    return (buf8,)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        outputs = call([predictions.shape[0], predictions.shape[1], predictions, targets])
        return outputs[0]
