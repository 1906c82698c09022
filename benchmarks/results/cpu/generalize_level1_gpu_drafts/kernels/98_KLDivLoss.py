"""Drafted by tools.draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Sizes and strides are read from the inputs at run time.
Fixed or assumed (Inductor specialised them): 2048*(((predictions.shape[1]*predictions.shape[0] + 2047)//2048)) <= 2**31 - 1; predictions.shape[1]*predictions.shape[0] <= 2**31 - 1.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def libdevice_isnan(x):
    return x != x



batch_size = 8192 * 2
input_shape = (8192 * 2,)
dim = 1


@triton.jit(do_not_specialize=['ks0', 'ks1'])
def triton_red_fused_log_mul_sub_sum_xlogy_0(in_ptr0, in_ptr1, out_ptr0, ks0, ks1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr, KS0 : tl.constexpr, KS1 : tl.constexpr):
    xnumel = 2048
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp19 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = r0_1 + x0*((2047 + ks0*ks1) // 2048)
        tmp1 = ks0*ks1
        tmp2 = tmp0 < tmp1
        tmp3 = tl.load(in_ptr0 + (((r0_1 + x0*((2047 + ks0*ks1) // 2048)) % (KS0*KS1))), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=0.0)
        tmp4 = libdevice_isnan(tmp3).to(tl.int1)
        tmp5 = tl.full([1, 1], 0.0, tl.float32)
        tmp6 = tmp3 == tmp5
        tmp7 = tl.log(tmp3)
        tmp8 = tmp3 * tmp7
        tmp9 = tl.where(tmp6, tmp5, tmp8)
        tmp10 = tl.full([1, 1], float("nan"), tl.float32)
        tmp11 = tl.where(tmp4, tmp10, tmp9)
        tmp12 = tl.load(in_ptr1 + (((r0_1 + x0*((2047 + ks0*ks1) // 2048)) % (KS0*KS1))), r0_mask & tmp2 & xmask, eviction_policy='evict_last', other=0.0)
        tmp13 = tl.log(tmp12)
        tmp14 = tmp3 * tmp13
        tmp15 = tmp11 - tmp14
        tmp16 = tl.full(tmp15.shape, 0, tmp15.dtype)
        tmp17 = tl.where(tmp2, tmp15, tmp16)
        tmp18 = tl.broadcast_to(tmp17, [XBLOCK, R0_BLOCK])
        tmp20 = _tmp19 + tmp18
        _tmp19 = tl.where(r0_mask & xmask, tmp20, _tmp19)
    tmp19 = tl.sum(_tmp19, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp19, xmask)


@triton.jit(do_not_specialize=['ks0'])
def triton_red_fused_div_log_mul_sub_sum_xlogy_1(in_out_ptr0, in_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 2048
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_0 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_0), r0_mask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tmp4 = ks0
    tmp5 = tmp4.to(tl.float32)
    tmp6 = (tmp2 / tmp5)
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp6, None)


def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1 = args
    device = arg2_1.device
    s67 = arg0_1
    s59 = arg1_1
    arg2_1_size = arg2_1.size()
    s24 = arg2_1_size[0]
    s13 = arg2_1_size[1]
    buf1 = torch.empty_strided((2048,), (1,), dtype=torch.float32, device=device)
    triton_red_fused_log_mul_sub_sum_xlogy_0_r0_numel = (2047 + s13 * s24) // 2048
    triton_red_fused_log_mul_sub_sum_xlogy_0[lambda meta: (triton.cdiv(2048, meta['XBLOCK']),)](arg3_1, arg2_1, buf1, s13, s24, 2048, triton_red_fused_log_mul_sub_sum_xlogy_0_r0_numel, XBLOCK=1, R0_BLOCK=2048, KS0=s13, KS1=s24, num_warps=16, num_stages=1)
    del arg2_1
    del arg3_1
    buf2 = torch.empty_strided((), (), dtype=torch.float32, device=device)
    buf3 = buf2
    del buf2
    triton_red_fused_div_log_mul_sub_sum_xlogy_1[lambda meta: (triton.cdiv(1, meta['XBLOCK']),)](buf3, buf1, s24, 1, 2048, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del buf1
    return (buf3,)


# The problem's own sizes: Inductor's kernels for exactly these sizes
# (tools/draft/sized.py); ModelNew.forward takes them where the call matches _SIZED.
@triton.jit
def triton_red_fused_log_mul_sub_sum_xlogy_0_sized(in_ptr0, in_ptr1, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 2048
    r0_numel = 131072
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp14 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 131072*x0), xmask, eviction_policy='evict_first', other=0.0)
        tmp9 = tl.load(in_ptr1 + (r0_1 + 131072*x0), xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = libdevice_isnan(tmp0).to(tl.int1)
        tmp2 = tl.full([1, 1], 0.0, tl.float32)
        tmp3 = tmp0 == tmp2
        tmp4 = tl.log(tmp0)
        tmp5 = tmp0 * tmp4
        tmp6 = tl.where(tmp3, tmp2, tmp5)
        tmp7 = tl.full([1, 1], float("nan"), tl.float32)
        tmp8 = tl.where(tmp1, tmp7, tmp6)
        tmp10 = tl.log(tmp9)
        tmp11 = tmp0 * tmp10
        tmp12 = tmp8 - tmp11
        tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
        tmp15 = _tmp14 + tmp13
        _tmp14 = tl.where(xmask, tmp15, _tmp14)
    tmp14 = tl.sum(_tmp14, 1)[:, None]
    tl.store(out_ptr0 + (x0), tmp14, xmask)


@triton.jit
def triton_red_fused_div_log_mul_sub_sum_xlogy_1_sized(in_out_ptr0, in_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 1
    r0_numel = 2048
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = tl.full([XBLOCK], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_0 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_0), r0_mask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = _tmp2 + tmp1
        _tmp2 = tl.where(r0_mask, tmp3, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tmp4 = tl.full([1, 1], 6.103515625e-05, tl.float32)
    tmp5 = tmp2 * tmp4
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (tl.full([1, 1], 0, tl.int32).broadcast_to(XBLOCK, 1)), tmp5, None)


def call_sized(args):
    arg0_1, arg1_1 = args
    device = arg0_1.device
    buf1 = torch.empty_strided((2048,), (1,), dtype=torch.float32, device=device)
    triton_red_fused_log_mul_sub_sum_xlogy_0_sized[lambda meta: (triton.cdiv(2048, meta['XBLOCK']),)](arg1_1, arg0_1, buf1, 2048, 131072, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del arg0_1
    del arg1_1
    buf2 = torch.empty_strided((), (), dtype=torch.float32, device=device)
    buf3 = buf2
    del buf2
    triton_red_fused_div_log_mul_sub_sum_xlogy_1_sized[lambda meta: (triton.cdiv(1, meta['XBLOCK']),)](buf3, buf1, 1, 2048, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    del buf1
    return (buf3,)


def _call_signature(model, args):
    """What the sized path was drafted for: each argument's shape, strides and dtype (or plain
    value), each parameter's and buffer's, and the plain-value attributes of each submodule."""
    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return True
        return isinstance(v, tuple) and all(plain(x) for x in v)

    def tensor(t):
        return (tuple(t.shape), tuple(t.stride()), str(t.dtype))

    sig = []
    for a in args:
        sig.append(tensor(a) if isinstance(a, torch.Tensor) else (a if plain(a) else type(a).__name__))
    for name, m in model.named_modules():
        for k, v in m._parameters.items():
            sig.append((name, k, None if v is None else tensor(v)))
        for k, v in m._buffers.items():
            sig.append((name, k, None if v is None else tensor(v)))
        for k, v in vars(m).items():
            if not k.startswith("_") and k != "training" and plain(v):
                sig.append((name, k, v))
    return sig


def _sized_call(model, args):
    return _SIZED is not None and _call_signature(model, args) == _SIZED


_SIZED = [((16384, 16384), (16384, 1), 'torch.float32'), ((16384, 16384), (16384, 1), 'torch.float32')]


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        if _sized_call(self, (predictions, targets)):  # the sizes the sized path was drafted for
            return self._forward_sized(predictions, targets)
        outputs = call([predictions.shape[0], predictions.shape[1], predictions, targets])
        return outputs[0]

    def _forward_sized(self, predictions, targets):
        outputs = call_sized([predictions, targets])
        return outputs[0]
