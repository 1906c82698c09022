"""Drafted by tools.draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Sizes and strides are read from the inputs at run time.
Fixed or assumed (Inductor specialised them): PythonMod(x.shape[1], self.gn.num_groups) == 0; Ne(self.gn.num_groups, -1); self.gn.num_groups >= 0; Ne(x.shape[0]*self.gn.num_groups, 0); Mod(x.shape[3]*x.shape[1]*x.shape[2]*x.shape[0], x.shape[0]*self.gn.num_groups) == 0; x.shape[3]*x.shape[1]*x.shape[2]*x.shape[0] == x.shape[0]*self.gn.num_groups*(((x.shape[3]*x.shape[1]*x.shape[2])//self.gn.num_groups)); Ne(self.gn.num_groups, x.shape[1]); Mod(x.shape[1], self.gn.num_groups) == 0; Ne(x.shape[3]*x.shape[2]*((x.shape[1]//self.gn.num_groups)), 0); Ne(self.gn.num_groups, 0); x.shape[3]*x.shape[2]*self.gn.num_groups*((x.shape[1]//self.gn.num_groups)) > 1; Ne(((x.shape[3]*x.shape[1]*x.shape[2])//self.gn.num_groups), (x.shape[1]//self.gn.num_groups)); and 43 more.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


batch_size = 112
features = 64
num_groups = 8
dim1 = 512
dim2 = 512


# Helpers copied from torch/_inductor/runtime/triton_helpers.py, or written for the
# libdevice calls the Triton interpreter cannot run.
@triton.jit
def th_div_floor_integer(a, b):
    # NOTE: a // b is C division, but we want floor division
    # Based on c10::div_floor_integer
    quot = a // b
    remainder = a % b
    fixed = tl.where(remainder != 0, quot - 1, quot)
    return tl.where((a < 0) != (b < 0), fixed, quot)


@triton.jit
def th_welford_reduce(value, mean, m2, weight, first_iteration):
    if first_iteration:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight


@triton.jit
def th_welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    delta = mean_2 - mean_1
    new_weight = weight_1 + weight_2
    w2_over_w = tl.where(new_weight == 0.0, 0.0, weight_2 / new_weight)
    return (
        mean_1 + delta * w2_over_w,
        m2_1 + m2_2 + delta * delta * weight_1 * w2_over_w,
        new_weight,
    )


@triton.jit
def th_welford(mean, m2, weight, dim):
    return tl.reduce((mean, m2, weight), dim, th_welford_combine)


@triton.jit(do_not_specialize=['ks0', 'ks1', 'ks2', 'ks3'])
def triton_red_fused_var_mean_view_0(in_ptr0, out_ptr0, out_ptr1, ks0, ks1, ks2, ks3, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp2_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_m2 = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_weight = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + x0*(th_div_floor_integer(ks0*ks1*ks2,  ks3))), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp2_mean_next, tmp2_m2_next, tmp2_weight_next = th_welford_reduce(
            tmp1, tmp2_mean, tmp2_m2, tmp2_weight, roffset == 0
        )
        tmp2_mean = tl.where(r0_mask & xmask, tmp2_mean_next, tmp2_mean)
        tmp2_m2 = tl.where(r0_mask & xmask, tmp2_m2_next, tmp2_m2)
        tmp2_weight = tl.where(r0_mask & xmask, tmp2_weight_next, tmp2_weight)
    tmp3, tmp4, tmp5 = th_welford(tmp2_mean, tmp2_m2, tmp2_weight, 1)
    tmp2 = tmp3[:, None]
    tmp6 = tmp4[:, None]
    tmp7 = tmp5[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp6, xmask)


@triton.jit(do_not_specialize=['ks0', 'ks1', 'ks2', 'ks3', 'ks4', 'ks5', 'ks6'])
def triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, out_ptr0, ks0, ks1, ks2, ks3, ks4, ks5, ks6, xnumel, XBLOCK : tl.constexpr, KS0 : tl.constexpr, KS1 : tl.constexpr, KS2 : tl.constexpr, KS3 : tl.constexpr, KS4 : tl.constexpr, KS5 : tl.constexpr, KS6 : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % KS0)
    x1 = ((xindex // KS0) % KS1)
    x2 = ((xindex // KS2) % KS3)
    x3 = xindex // KS4
    x5 = xindex // KS0
    tmp0 = tl.load(in_ptr0 + (((x0 + ks0*x1 + ks0*ks1*x2 + ks0*ks1*ks3*x3) % (KS6*KS5*(th_div_floor_integer(KS0*KS1*KS3,  KS6))))), xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_ptr1 + ((((x0 + ks0*x1 + ks0*ks1*x2 + ks0*ks1*ks3*x3) // (th_div_floor_integer(KS4,  KS6))) % (KS6*KS5))), xmask, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr2 + ((((x0 + ks0*x1 + ks0*ks1*x2 + ks0*ks1*ks3*x3) // (th_div_floor_integer(KS4,  KS6))) % (KS6*KS5))), xmask, eviction_policy='evict_last')
    tmp7 = in_ptr3
    tmp12 = tl.load(in_ptr4 + (x2), xmask, eviction_policy='evict_last')
    tmp14 = tl.load(in_ptr5 + (x2), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 - tmp1
    tmp4 = ((0) * ((0) >= (th_div_floor_integer(ks4,  ks6))) + (th_div_floor_integer(ks4,  ks6)) * ((th_div_floor_integer(ks4,  ks6)) > (0)))
    tmp5 = tmp4.to(tl.float32)
    tmp6 = (tmp3 / tmp5)
    tmp8 = tmp7.to(tl.float32)
    tmp9 = tmp6 + tmp8
    tmp10 = tl.rsqrt(tmp9)
    tmp11 = tmp2 * tmp10
    tmp13 = tmp11 * tmp12
    tmp15 = tmp13 + tmp14
    tl.store(out_ptr0 + (x0 + x5*((1) * ((1) >= (th_div_floor_integer(ks6*ks0*(th_div_floor_integer(ks3,  ks6)),  ks3))) + (th_div_floor_integer(ks6*ks0*(th_div_floor_integer(ks3,  ks6)),  ks3)) * ((th_div_floor_integer(ks6*ks0*(th_div_floor_integer(ks3,  ks6)),  ks3)) > (1)))), tmp15, xmask)


def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1, arg9_1 = args
    device = arg1_1.device
    s89 = arg0_1
    s77 = arg3_1
    s27 = arg4_1
    s53 = arg5_1
    s0 = arg6_1
    s90 = arg8_1
    buf0 = torch.empty_strided((s77, s90, 1), (s90, 1, s90 * s77), dtype=torch.float32, device=device)
    buf1 = torch.empty_strided((s77, s90, 1), (s90, 1, s90 * s77), dtype=torch.float32, device=device)
    triton_red_fused_var_mean_view_0_xnumel = s90 * s77
    triton_red_fused_var_mean_view_0_r0_numel = s0 * s27 * s53 // s90
    triton_red_fused_var_mean_view_0[lambda meta: (triton.cdiv(triton_red_fused_var_mean_view_0_xnumel, meta['XBLOCK']),)](arg7_1, buf0, buf1, s0, s27, s53, s90, triton_red_fused_var_mean_view_0_xnumel, triton_red_fused_var_mean_view_0_r0_numel, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    ps0 = s0 * s53
    ps1 = s0 * s27 * s53
    buf3 = torch.empty_strided((s77, s27, s53, s0), (s27 * s53 * max(1, s90 * s0 * (s27 // s90) // s27), s53 * max(1, s90 * s0 * (s27 // s90) // s27), max(1, s90 * s0 * (s27 // s90) // s27), 1), dtype=torch.float32, device=device)
    triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1_xnumel = s0 * s27 * s53 * s77
    triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1[lambda meta: (triton.cdiv(triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1_xnumel, meta['XBLOCK']),)](arg7_1, buf0, buf1, arg9_1, arg1_1, arg2_1, buf3, s0, s53, ps0, s27, ps1, s77, s90, triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1_xnumel, XBLOCK=1024, KS0=s0, KS1=s53, KS2=ps0, KS3=s27, KS4=ps1, KS5=s77, KS6=s90, num_warps=4, num_stages=1)
    del arg1_1
    del arg2_1
    del arg7_1
    del arg9_1
    del buf0
    del buf1
    return (buf3,)


# The problem's own sizes: Inductor's kernels for exactly these sizes
# (tools/draft/sized.py); ModelNew.forward takes them where the call matches _SIZED.
@triton.jit
def triton_red_fused_var_mean_view_0_sized(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 896
    r0_numel = 2097152
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp2_mean = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_m2 = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    tmp2_weight = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 2097152*x0), xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp2_mean_next, tmp2_m2_next, tmp2_weight_next = th_welford_reduce(
            tmp1, tmp2_mean, tmp2_m2, tmp2_weight, roffset == 0
        )
        tmp2_mean = tl.where(xmask, tmp2_mean_next, tmp2_mean)
        tmp2_m2 = tl.where(xmask, tmp2_m2_next, tmp2_m2)
        tmp2_weight = tl.where(xmask, tmp2_weight_next, tmp2_weight)
    tmp3, tmp4, tmp5 = th_welford(tmp2_mean, tmp2_m2, tmp2_weight, 1)
    tmp2 = tmp3[:, None]
    tmp6 = tmp4[:, None]
    tmp7 = tmp5[:, None]
    tl.store(out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr1 + (x0), tmp6, xmask)


@triton.jit
def triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1_sized(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1879048192
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)[:]
    x4 = xindex
    x1 = ((xindex // 262144) % 64)
    tmp0 = tl.load(in_ptr0 + (x4), None)
    tmp1 = tl.load(in_ptr1 + (x4 // 2097152), None, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr2 + (x4 // 2097152), None, eviction_policy='evict_last')
    tmp10 = tl.load(in_ptr3 + (x1), None, eviction_policy='evict_last')
    tmp12 = tl.load(in_ptr4 + (x1), None, eviction_policy='evict_last')
    tmp2 = tmp0 - tmp1
    tmp4 = tl.full([1], 2097152.0, tl.float32)
    tmp5 = (tmp3 / tmp4)
    tmp6 = tl.full([1], 1e-05, tl.float32)
    tmp7 = tmp5 + tmp6
    tmp8 = tl.rsqrt(tmp7)
    tmp9 = tmp2 * tmp8
    tmp11 = tmp9 * tmp10
    tmp13 = tmp11 + tmp12
    tl.store(out_ptr0 + (x4), tmp13, None)


def call_sized(args):
    arg0_1, arg1_1, arg2_1 = args
    device = arg0_1.device
    buf0 = torch.empty_strided((112, 8, 1), (8, 1, 896), dtype=torch.float32, device=device)
    buf1 = torch.empty_strided((112, 8, 1), (8, 1, 896), dtype=torch.float32, device=device)
    triton_red_fused_var_mean_view_0_sized[lambda meta: (triton.cdiv(896, meta['XBLOCK']),)](arg2_1, buf0, buf1, 896, 2097152, XBLOCK=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
    buf3 = torch.empty_strided((112, 64, 512, 512), (16777216, 262144, 512, 1), dtype=torch.float32, device=device)
    triton_poi_fused_add_mul_rsqrt_sub_var_mean_view_1_sized[lambda meta: (triton.cdiv(1879048192, meta['XBLOCK']),)](arg2_1, buf0, buf1, arg0_1, arg1_1, buf3, 1879048192, XBLOCK=1024, num_warps=4, num_stages=1)
    del arg0_1
    del arg1_1
    del arg2_1
    del buf0
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


_SIZED = [((112, 64, 512, 512), (16777216, 262144, 512, 1), 'torch.float32'), ('gn', 'weight', ((64,), (1,), 'torch.float32')), ('gn', 'bias', ((64,), (1,), 'torch.float32')), ('gn', 'num_groups', 8), ('gn', 'num_channels', 64), ('gn', 'eps', 1e-05), ('gn', 'affine', True)]


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self, num_features: int, num_groups: int):
        """
        Initializes the GroupNorm layer.

        Args:
            num_features (int): Number of features in the input tensor.
            num_groups (int): Number of groups to divide the channels into.
        """
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor):
        if _sized_call(self, (x,)):  # the sizes the sized path was drafted for
            return self._forward_sized(x)
        outputs = call([self.gn.weight.shape[0], self.gn.weight, self.gn.bias, x.shape[0], x.shape[1], x.shape[2], x.shape[3], x, self.gn.num_groups, self.gn.eps])
        return outputs[0]

    def _forward_sized(self, x: torch.Tensor):
        outputs = call_sized([self.gn.weight, self.gn.bias, x])
        return outputs[0]
