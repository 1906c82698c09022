"""Drafted by tools.draft from TorchInductor (torch 2.11.0+cu130, cuda codegen).

Sizes and strides are read from the inputs at run time.
Fixed or assumed (Inductor specialised them): K.shape[1] == Q.shape[1]; K.shape[0] == Q.shape[0]; K.shape[3] == Q.shape[3]; V.shape[2] == K.shape[2]; (FloatTrueDiv(1.0, FloatPow(ToFloat(Q.shape[3]), 0.5))) >= 0.0; Q.shape[1]*Q.shape[0]*Q.shape[2]*K.shape[2] <= 2**31 - 1; Q.shape[1]*Q.shape[0]*Q.shape[3]*Q.shape[2] <= 2**31 - 1; Q.shape[1]*Q.shape[0]*Q.shape[3]*K.shape[2] <= 2**31 - 1; Q.shape[1]*Q.shape[0]*Q.shape[2]*V.shape[3] <= 2**31 - 1; Q.shape[1]*Q.shape[0]*V.shape[3]*K.shape[2] <= 2**31 - 1; Q.shape[1]*Q.shape[0]*Q.shape[2] <= 2**31 - 1.
GEMMs: this project's template, tl.dot input precision tf32x3 for fp32 operands
(the `precision=` of each gemm(...) call below says what it uses).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def libdevice_pow(x, y):
    r = tl.exp2(y * tl.log2(tl.abs(x)))
    y_is_int = y == tl.floor(y)
    y_is_odd = y_is_int & (y - 2.0 * tl.floor(y * 0.5) == 1.0)
    r = tl.where((x < 0) & y_is_odd, -r, r)
    r = tl.where((x < 0) & (~y_is_int), float('nan'), r)
    return tl.where(y == 0, 1.0, r)



batch_size = 32
num_heads = 32
sequence_length = 512
embedding_dimension = 1024


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
def th__any_combine(a, b):
    return a | b


@triton.jit
def th_any(a, dim):
    return tl.reduce(a, dim, th__any_combine)


@triton.jit
def th_max2(a, dim):
    return tl.reduce(a, dim, th_maximum)


@triton.jit(do_not_specialize=['ks0'])
def triton_poi_fused_mul_0(in_ptr0, out_ptr0, ks0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = libdevice_pow(((tl.full([], 1.00000000000000, tl.float64) / (libdevice_pow((ks0.to(tl.float64)).to(tl.float64), (tl.full([], 0.500000000000000, tl.float64)).to(tl.float64))))).to(tl.float64), (tl.full([], 0.500000000000000, tl.float64)).to(tl.float64))
    tmp2 = tmp1.to(tl.float32)
    tmp3 = tmp0 * tmp2
    tl.store(out_ptr0 + (x0), tmp3, xmask)


@triton.jit(do_not_specialize=['ks0', 'ks1'])
def triton_poi_fused_mul_transpose_1(in_ptr0, out_ptr0, ks0, ks1, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr, KS0 : tl.constexpr):
    yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x2 = xindex
    y0 = (yindex % KS0)
    y1 = yindex // KS0
    y3 = yindex
    tmp0 = tl.load(in_ptr0 + (y0 + ks0*x2 + ks0*ks1*y1), xmask & ymask, eviction_policy='evict_last')
    tmp1 = libdevice_pow(((tl.full([], 1.00000000000000, tl.float64) / (libdevice_pow((ks0.to(tl.float64)).to(tl.float64), (tl.full([], 0.500000000000000, tl.float64)).to(tl.float64))))).to(tl.float64), (tl.full([], 0.500000000000000, tl.float64)).to(tl.float64))
    tmp2 = tmp1.to(tl.float32)
    tmp3 = tmp0 * tmp2
    tl.store(out_ptr0 + (x2 + ks1*y3), tmp3, xmask & ymask)


@triton.jit(do_not_specialize=['ks0'])
def triton_red_fused__safe_softmax_exp_prepare_softmax_online_sub_view_2(in_out_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    _tmp7 = tl.full([XBLOCK, R0_BLOCK], False, tl.int1)
    _tmp11 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_out_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.full([1, 1], float("-inf"), tl.float32)
        tmp2 = tmp0 == tmp1
        tmp3 = tmp2 == 0
        tmp4 = tmp3.to(tl.int64)
        tmp5 = (tmp4 != 0)
        tmp6 = tl.broadcast_to(tmp5, [XBLOCK, R0_BLOCK])
        tmp8 = _tmp7 | tmp6
        _tmp7 = tl.where(r0_mask & xmask, tmp8, _tmp7)
        tmp10 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp12 = th_maximum(_tmp11, tmp10)
        _tmp11 = tl.where(r0_mask & xmask, tmp12, _tmp11)
    tmp9 = _tmp7.to(tl.int8)
    tmp7 = th_any(tmp9, 1)[:, None]
    tmp11 = th_max2(_tmp11, 1)[:, None]
    _tmp17 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp13 = tl.load(in_out_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp14 = tmp13 - tmp11
        tmp15 = tl.exp(tmp14)
        tmp16 = tl.broadcast_to(tmp15, [XBLOCK, R0_BLOCK])
        tmp18 = _tmp17 + tmp16
        _tmp17 = tl.where(r0_mask & xmask, tmp18, _tmp17)
    tmp17 = tl.sum(_tmp17, 1)[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp20 = tl.load(in_out_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp19 = tmp7 == 0
        tmp21 = tmp20 - tmp11
        tmp22 = tl.exp(tmp21)
        tmp23 = (tmp22 / tmp17)
        tmp24 = tl.full([1, 1], 0.0, tl.float32)
        tmp25 = tl.where(tmp19, tmp24, tmp23)
        tl.store(in_out_ptr0 + (r0_1 + ks0*x0), tmp25, r0_mask & xmask)


# This project's GEMM template (tools/gemm_template.py): sizes and strides from the
# tensors, tf32x3 for fp32, split-K from the shapes; launch parameters at each call.
@triton.jit
def _gemm_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, k_per_split,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cs, stride_cb, stride_cm, stride_cn,
    stride_biasb, stride_biasm, stride_biasn, alpha, beta,
    HAS_BIAS: tl.constexpr, PARTIAL: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    HINT_M: tl.constexpr = True, HINT_N: tl.constexpr = True,
):
    # Program ids: (output tile, K split, batch). Tiles go GROUP_M rows of tiles at a time, so
    # programs running together share A's rows and B's columns in L2.
    pid = tl.program_id(0)
    split = tl.program_id(1)
    batch = tl.program_id(2)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    group_m = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % group_m
    pid_n = (pid % width) // group_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Rows/columns past the edge read a valid row instead (their results are never stored),
    # so only K needs a mask in the loop. The hints (a block of BLOCK contiguous indices
    # starting at a multiple of BLOCK) are false in the last block when the size is not a
    # multiple of 16: `rn % N` wraps to 0 mid-vector, and where the operand is contiguous
    # along that dimension and its rows 16-element aligned, Triton's 16-byte loads start at
    # misaligned addresses (level1/8 on the H200, N = 5921: "misaligned address").
    if HINT_M:
        ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        ram = rm % M
    if HINT_N:
        rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    else:
        rbn = rn % N
    k_start = split * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    rk = k_start + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + ram[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + rk[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        kk = k - k_start
        a = tl.load(a_ptrs, mask=rk[None, :] < k_end - kk, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_end - kk, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if PARTIAL:  # split K: fp32 partial sums, the reduce kernel applies the epilogue
        c_ptrs = c_ptr + split * stride_cs + batch * stride_cb
        tl.store(c_ptrs + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=mask)
    else:
        acc = acc * alpha
        if HAS_BIAS:
            bias_ptrs = bias_ptr + batch * stride_biasb
            bias_ptrs += rm[:, None] * stride_biasm + rn[None, :] * stride_biasn
            acc += beta * tl.load(bias_ptrs, mask=mask, other=0.0).to(tl.float32)
        c_ptrs = c_ptr + batch * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemm_split_reduce_kernel(
    ws_ptr, c_ptr, bias_ptr, M, N, SPLITS,
    stride_ws, stride_wb, stride_wm, stride_wn, stride_cb, stride_cm, stride_cn,
    stride_biasb, stride_biasm, stride_biasn, alpha, beta,
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    batch = tl.program_id(2)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = batch * stride_wb + rm[:, None] * stride_wm + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(0, SPLITS):
        acc += tl.load(ws_ptr + s * stride_ws + offs, mask=mask, other=0.0)
    acc = acc * alpha
    if HAS_BIAS:
        bias_ptrs = bias_ptr + batch * stride_biasb
        bias_ptrs += rm[:, None] * stride_biasm + rn[None, :] * stride_biasn
        acc += beta * tl.load(bias_ptrs, mask=mask, other=0.0).to(tl.float32)
    c_ptrs = c_ptr + batch * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemv_kernel(
    a_ptr, x_ptr, ws_ptr, M, K, k_per_split, stride_ab, stride_am, stride_ak, stride_xb,
    stride_xk, stride_ws, stride_wb, stride_wm,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # A matrix-vector product (N = 1) streams A once: fp32 multiply-adds in a [BLOCK_M, BLOCK_K]
    # register tile, rows of A read along K, summed across K at the end; each program does one
    # K range of BLOCK_M rows, and the split reduce kernel adds the ranges and the epilogue.
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    batch = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < M
    k_start = split * k_per_split
    k_end = tl.minimum(k_start + k_per_split, K)
    a_row = a_ptr + batch * stride_ab + rm[:, None] * stride_am
    x_base = x_ptr + batch * stride_xb
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        k_ok = rk < k_end
        a = tl.load(a_row + rk[None, :] * stride_ak, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        x = tl.load(x_base + rk * stride_xk, mask=k_ok, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)[None, :]
    out = tl.sum(acc, axis=1)
    tl.store(ws_ptr + split * stride_ws + batch * stride_wb + rm * stride_wm, out, mask=m_ok)


_GEMM_SMS = {}


def _gemm_sms(device):
    """Streaming multiprocessors of the device (132 on an H100/H200; also assumed off-GPU)."""
    if device.type != "cuda":
        return 132
    if device not in _GEMM_SMS:
        _GEMM_SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _GEMM_SMS[device]


_GEMM_ALIGN_MIN = 1 << 30
"""M*N*K from which an operand whose leading stride is not a multiple of 16 elements is copied
into an aligned buffer first (`_gemm_aligned`)."""


def _gemm_aligned(t):
    """`t` itself, or a copy whose leading stride (rows apart, or columns for a transposed view)
    is a multiple of 16 elements. Triton assumes 16-element divisibility of an integer argument
    only when it holds, and without it cannot vectorise the tile loads: the likely cause (not
    measured) of level1/8 (8205x2949x5921, rows 2949 floats apart) at 0.75x of cuBLAS where the
    aligned GEMMs reached 1.06x-1.73x. The copy reads and writes the operand once (O(MK)
    against the GEMM's O(MNK))."""
    if t.dim() == 3 and t.stride(0) == 0:
        return t  # a broadcast batch: copying would materialise it
    rows, cols = t.shape[-2], t.shape[-1]
    s_row, s_col = t.stride(-2), t.stride(-1)
    if s_col == 1 and s_row % 16 and rows > 1 and cols > 1:  # (K, 1): no vector to align
        buf = torch.empty((*t.shape[:-1], triton.cdiv(cols, 16) * 16), dtype=t.dtype, device=t.device)
        view = buf[..., :cols]
    elif s_row == 1 and s_col % 16 and cols > 1 and rows > 1:
        buf = torch.empty((*t.shape[:-2], cols, triton.cdiv(rows, 16) * 16), dtype=t.dtype, device=t.device)
        view = buf[..., :rows].transpose(-1, -2)
    else:
        return t
    view.copy_(t)
    return view


_GEMV_BLOCK_M = 32
_GEMV_BLOCK_K = 256


def _gemv(a, b, out, bias, alpha, beta, M, K, B, batched):
    """out = alpha * (a @ b) + beta * bias where b has one column: fp32 multiply-adds streaming
    A once (`_gemv_kernel`) in enough (row block, K range) programs to fill the GPU, then the
    split reduce kernel (sums and epilogue). Its products are exact fp32 whatever `precision`
    says (more accurate than tf32x3). A matrix-vector product is memory-bound: level1/4 (A of
    8 GB) ran through the tile GEMM at 66% of the H200's bandwidth, cuBLAS at 86%."""
    bm, bk = _GEMV_BLOCK_M, _GEMV_BLOCK_K
    grid_m = triton.cdiv(M, bm)
    # about four programs an SM, each at least 8 K blocks long
    splits = max(1, min(triton.cdiv(4 * _gemm_sms(a.device), grid_m * B), K // (8 * bk), 256))
    k_per_split = triton.cdiv(triton.cdiv(K, splits), bk) * bk
    splits = triton.cdiv(K, k_per_split)
    ws = torch.empty((splits, B, M, 1), dtype=torch.float32, device=a.device)
    sa = (a.stride(0) if batched else 0, a.stride(-2), a.stride(-1))
    sx = (b.stride(0) if batched and b.dim() == 3 else 0, b.stride(-2))
    _gemv_kernel[(grid_m, splits, B)](
        a, b, ws, M, K, k_per_split, *sa, *sx, ws.stride(0), ws.stride(1), ws.stride(2),
        BLOCK_M=bm, BLOCK_K=bk, num_warps=8,
    )
    sc = (out.stride(0) if batched else 0, out.stride(-2), out.stride(-1))
    sbias = _gemm_bias_strides(bias, batched) if bias is not None else (0, 0, 0)
    _gemm_split_reduce_kernel[(triton.cdiv(M, 64), 1, B)](
        ws, out, bias if bias is not None else out, M, 1, splits, *ws.stride(), *sc, *sbias,
        alpha, beta, HAS_BIAS=bias is not None, BLOCK_M=64, BLOCK_N=16, num_warps=4,
    )
    return out


def _gemm_bias_strides(bias, batched):
    """(batch, row, column) strides that broadcast `bias` over the output: 0 where it has
    size 1 or no such dimension (a Linear's bias is (N,))."""
    sizes, strides = list(bias.shape), list(bias.stride())
    while len(sizes) < 3:
        sizes.insert(0, 1)
        strides.insert(0, 0)
    return tuple(0 if n == 1 else s for n, s in zip(sizes, strides))


def gemm(
    a, b, out=None, bias=None, alpha=1.0, beta=1.0, *, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32,
    GROUP_M=8, SPLIT_K=0, num_warps=8, num_stages=3, precision="tf32x3",
):
    """out = alpha * (a @ b) + beta * bias for 2D (mm/addmm) or 3D (bmm/baddbmm) operands;
    every size and stride is read from the tensors. SPLIT_K=0 chooses the number of K splits
    from the shapes: enough programs for two waves of the GPU, at least 8 K-tiles each."""
    batched = a.dim() == 3
    M, K = a.shape[-2], a.shape[-1]
    N = b.shape[-1]
    B = a.shape[0] if batched else 1
    if out is None:
        out = torch.empty((B, M, N) if batched else (M, N), dtype=a.dtype, device=a.device)
    if a.dtype != torch.float32:
        precision = "ieee"  # tf32 modes apply to fp32 operands only
    if N == 1 and K > 0:  # a matrix-vector product: no tile GEMM (`_gemv`)
        return _gemv(a, b, out, bias, alpha, beta, M, K, B, batched)
    if M * N * K * B >= _GEMM_ALIGN_MIN:
        if bias is None and (K % 16 or N % 16) and a.stride(-1) == 1 and b.stride(-1) == 1:
            # Zero-padded to multiples of 16: the K mask and B's columns become provably
            # aligned, so both operands load 16 bytes at a time (sm_90 PTX of level1/8's
            # 8205x2949x5921: 72 4-byte cp.async a thread and step as it was, 18 16-byte ones
            # padded). Zero products add exactly nothing; the output is copied back.
            kp, np_ = triton.cdiv(K, 16) * 16, triton.cdiv(N, 16) * 16
            a_p = torch.zeros((*a.shape[:-1], kp), dtype=a.dtype, device=a.device)
            a_p[..., :K].copy_(a)
            b_p = torch.zeros((*b.shape[:-2], kp, np_), dtype=b.dtype, device=b.device)
            b_p[..., :K, :N].copy_(b)
            out_p = gemm(
                a_p, b_p, alpha=alpha, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                GROUP_M=GROUP_M, SPLIT_K=SPLIT_K, num_warps=num_warps, num_stages=num_stages,
                precision=precision,
            )
            out.copy_(out_p[..., :N])
            return out
        a, b = _gemm_aligned(a), _gemm_aligned(b)
    sa = (a.stride(0) if batched else 0, a.stride(-2), a.stride(-1))
    sb = (b.stride(0) if batched and b.dim() == 3 else 0, b.stride(-2), b.stride(-1))
    sc = (out.stride(0) if batched else 0, out.stride(-2), out.stride(-1))
    sbias = _gemm_bias_strides(bias, batched) if bias is not None else (0, 0, 0)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N) * B
    splits = SPLIT_K
    if splits == 0:
        splits = max(1, min(triton.cdiv(2 * _gemm_sms(a.device), tiles), K // (8 * BLOCK_K), 64))
    splits = max(1, min(splits, triton.cdiv(K, BLOCK_K)))
    k_per_split = triton.cdiv(triton.cdiv(K, splits), BLOCK_K) * BLOCK_K
    splits = triton.cdiv(K, k_per_split) if K > 0 else 1
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), splits, B)
    bias_arg = bias if bias is not None else out
    hints = dict(HINT_M=M % 16 == 0, HINT_N=N % 16 == 0)  # see the kernel
    if splits == 1:
        _gemm_kernel[grid](
            a, b, out, bias_arg, M, N, K, k_per_split, *sa, *sb, 0, *sc, *sbias, alpha, beta,
            HAS_BIAS=bias is not None, PARTIAL=False, PRECISION=precision, BLOCK_M=BLOCK_M,
            BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=num_warps,
            num_stages=num_stages, **hints,
        )
        return out
    ws = torch.empty((splits, B, M, N), dtype=torch.float32, device=a.device)
    _gemm_kernel[grid](
        a, b, ws, bias_arg, M, N, K, k_per_split, *sa, *sb, *ws.stride(), *sbias, alpha, beta,
        HAS_BIAS=False, PARTIAL=True, PRECISION=precision, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=num_warps, num_stages=num_stages, **hints,
    )
    _gemm_split_reduce_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64), B)](
        ws, out, bias_arg, M, N, splits, *ws.stride(), *sc, *sbias, alpha, beta,
        HAS_BIAS=bias is not None, BLOCK_M=64, BLOCK_N=64, num_warps=4,
    )
    return out


def reinterpret_tensor(tensor, size, stride, offset_increment=0):
    """A view of `tensor`'s storage (Inductor's `reinterpret_tensor`)."""
    return tensor.as_strided(size, stride, tensor.storage_offset() + offset_increment)


def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1, arg7_1, arg8_1 = args
    device = arg4_1.device
    s39 = arg0_1
    s51 = arg1_1
    s46 = arg2_1
    s40 = arg3_1
    s60 = arg5_1
    s48 = arg7_1
    arg4_1_size = arg4_1.size()
    s33 = arg4_1_size[0]
    s24 = arg4_1_size[1]
    buf0 = torch.empty_strided((s33, s24, s46, s40), (s24 * s40 * s46, s40 * s46, s40, 1), dtype=torch.float32, device=device)
    triton_poi_fused_mul_0_xnumel = s24 * s33 * s40 * s46
    triton_poi_fused_mul_0[lambda meta: (triton.cdiv(triton_poi_fused_mul_0_xnumel, meta['XBLOCK']),)](arg4_1, buf0, s40, triton_poi_fused_mul_0_xnumel, XBLOCK=1024, num_warps=4, num_stages=1)
    del arg4_1
    buf1 = torch.empty_strided((s33, s24, s40, s60), (s24 * s40 * s60, s40 * s60, s60, 1), dtype=torch.float32, device=device)
    triton_poi_fused_mul_transpose_1_ynumel = s24 * s33 * s40
    triton_poi_fused_mul_transpose_1[(triton.cdiv(s60, 256), triton.cdiv(triton.cdiv(triton_poi_fused_mul_transpose_1_ynumel, 32), triton.cdiv(triton.cdiv(triton_poi_fused_mul_transpose_1_ynumel, 32), 65535)), triton.cdiv(triton.cdiv(triton_poi_fused_mul_transpose_1_ynumel, 32), 65535))](arg6_1, buf1, s40, s60, triton_poi_fused_mul_transpose_1_ynumel, s60, XBLOCK=256, YBLOCK=32, KS0=s40, num_warps=8, num_stages=1)
    del arg6_1
    buf2 = torch.empty_strided((s24 * s33, s46, s60), (s46 * s60, s60, 1), dtype=torch.float32, device=device)
    gemm(reinterpret_tensor(buf0, (s24 * s33, s46, s40), (s40 * s46, s40, 1), 0), reinterpret_tensor(buf1, (s24 * s33, s40, s60), (s40 * s60, s60, 1), 0), out=buf2, BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, SPLIT_K=0, num_warps=8, num_stages=4, precision='tf32x3')
    del buf0
    del buf1
    buf6 = reinterpret_tensor(buf2, (s33, s24, s46, s60), (s24 * s46 * s60, s46 * s60, s60, 1), 0)
    del buf2
    triton_red_fused__safe_softmax_exp_prepare_softmax_online_sub_view_2_xnumel = s24 * s33 * s46
    triton_red_fused__safe_softmax_exp_prepare_softmax_online_sub_view_2[lambda meta: (triton.cdiv(triton_red_fused__safe_softmax_exp_prepare_softmax_online_sub_view_2_xnumel, meta['XBLOCK']),)](buf6, s60, triton_red_fused__safe_softmax_exp_prepare_softmax_online_sub_view_2_xnumel, s60, XBLOCK=2, R0_BLOCK=256, num_warps=4, num_stages=1)
    buf7 = torch.empty_strided((s24 * s33, s46, s48), (s46 * s48, s48, 1), dtype=torch.float32, device=device)
    gemm(reinterpret_tensor(buf6, (s24 * s33, s46, s60), (s46 * s60, s60, 1), 0), reinterpret_tensor(arg8_1, (s24 * s33, s60, s48), (s48 * s60, s48, 1), 0), out=buf7, BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, SPLIT_K=0, num_warps=8, num_stages=4, precision='tf32x3')
    del arg8_1
    del buf6
    return (reinterpret_tensor(buf7, (s33, s24, s46, s48), (s24 * s46 * s48, s46 * s48, s48, 1), 0),)


class ModelNew(nn.Module):
    """Model with its forward in the Triton kernels above (drafted from Inductor)."""

    def __init__(self):
        super().__init__()

    def forward(self, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor):
        outputs = call([Q.shape[0], Q.shape[1], Q.shape[2], Q.shape[3], Q, K.shape[2], K, V.shape[3], V])
        return outputs[0]
