"""This project's GEMM template: a standalone Triton matmul that compiler drafts inline for
`mm`, `addmm`, `bmm` and `baddbmm` (instead of Inductor's `triton_tem_*` templates or a cuBLAS
call), and whose launch parameters the tuner searches (`tools.compile.tune.gemm_variants`).

Why: on an H200, Inductor's fp32 GEMM templates ran at ~0.5x of cuBLAS (12_Gemm_Multiply_LeakyReLU:
5.71 ms against 2.73 ms), while a plain autotuned Triton matmul with `input_precision="tf32x3"`
ran at ~1.07x of cuBLAS fp32 and was more accurate than it (max abs error against fp64 4.0e-4
against cuBLAS's 2.4e-3 at 1024x8192x8192; issue 15). Plain TF32 is 2.7x faster but wrong at
fp32 tolerances (max abs error 0.37), so it is only a tuner variant that must get through verification.

The template takes every size and stride from the tensors it gets (no size is baked in), fuses
`addmm`'s bias and `alpha`/`beta`, and splits K over several programs (a second kernel sums the
fp32 partials and applies the epilogue) when the output has too few tiles to fill the GPU:
skinny and large-K shapes (256x524288x256: 4 output tiles for 132 SMs). A product with one
output column (a matrix-vector product) takes a GEMV kernel instead: fp32 multiply-adds
streaming A once, split over K, with the same reduce kernel (`_gemv`).

`GEMM_SOURCE` is the text inlined into a candidate; `GEMM_FUNCTIONS` the launcher names it defines.
A bf16/fp16 draft inlines `gemm_source(precision)` instead: the same, with `gemm` sending 2-byte
operands to a kernel whose operands are 16-element aligned (`GEMM_TC_SOURCE`), and its calls start
from `HALF_CONFIG` (`config_for`); fp32 drafts keep `GEMM_SOURCE` and `DEFAULT_CONFIG` as they were.
"""

from __future__ import annotations

GEMM_FUNCTIONS = ("gemm",)

PRECISIONS = ("tf32x3", "ieee", "tf32")
"""`tl.dot` input precisions for fp32 operands: `tf32x3` (three TF32 products: about fp32
accuracy, tensor-core speed), `ieee` (exact fp32 FMA, no tensor cores), `tf32` (one TF32
product: 10-bit mantissa, fails fp32 tolerances on most problems). Other dtypes use their own."""

DEFAULT_CONFIG = {
    "BLOCK_M": 128,
    "BLOCK_N": 128,
    "BLOCK_K": 32,
    "GROUP_M": 8,
    "SPLIT_K": 0,
    "num_warps": 8,
    "num_stages": 3,
    "precision": "tf32x3",
}
"""The call-site defaults a draft starts from (the tuner varies them): 128x128x32 tiles with
8 warps and 3 stages were the best of the 6 configs measured for fp32 tf32x3 at 1024x8192x8192 and
4096^3 on the H200 (issue 15). `SPLIT_K=0`: chosen from the shapes at run time."""

GEMM_SOURCE = '''
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
'''


HALF_PRECISIONS = ("bf16", "fp16")
"""The `--precision` values (`tools.core.problem_dtype`) whose drafts get the tensor-core GEMM
(`gemm_source`, `config_for`): 2-byte operands."""

HALF_CONFIG = {
    "BLOCK_M": 128,
    "BLOCK_N": 256,
    "BLOCK_K": 64,
    "GROUP_M": 8,
    "SPLIT_K": 0,
    "num_warps": 8,
    "num_stages": 3,
    "precision": "ieee",
}
"""The call-site defaults of a bf16/fp16 draft: Triton's Hopper fp16 matmul tile (128x256x64,
8 warps, 3 stages: (128 + 256) * 64 * 2 B = 48 KiB a stage). `precision` changes nothing for
2-byte operands (tl.dot multiplies them natively, whatever it says): "ieee", what the template
used for them already, so that no tuner or fallback variant switches it for a "more exact" one
that is the same kernel (`tools.compile.tune.full_precision_variant`)."""

_TC_DISPATCH_AFTER = """        return _gemv(a, b, out, bias, alpha, beta, M, K, B, batched)
"""
_TC_DISPATCH = """    if a.dtype in (torch.float16, torch.bfloat16) and b.dtype == a.dtype:
        return _gemm_tc(
            a, b, out, bias, alpha, beta, M, N, K, B, batched, (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M),
            SPLIT_K, num_warps, num_stages,
        )
"""

GEMM_TC_SOURCE = '''
@triton.jit
def _gemm_tc_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, N_LOAD, K, k_per_split,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cs, stride_cb, stride_cm, stride_cn,
    stride_biasb, stride_biasm, stride_biasn, alpha, beta,
    HAS_BIAS: tl.constexpr, PARTIAL: tl.constexpr, EVEN_K: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    HINT_M: tl.constexpr, HINT_N: tl.constexpr,
):
    # `_gemm_kernel` for fp16/bf16 operands: they go to tl.dot as they are (tensor cores, fp32
    # accumulator), the output is cast to the output's dtype. Triton copies a tile into shared
    # memory with cp.async (so the K loop is software-pipelined) only 4 to 16 bytes a thread at
    # a time, and loads as wide as it can prove rows and K aligned: a 2-byte load is never a
    # cp.async, so `_gemm_tc` gives this kernel rows and K of multiples of 16 elements. The K
    # loop counts blocks; the mask is against the K left, none where every block is whole.
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
    if HINT_M:  # see `_gemm_kernel`
        ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    else:
        ram = rm % M
    # B's columns are read up to N_LOAD: N, or the zeroed columns of a padded copy past it
    if HINT_N:
        rbn = tl.max_contiguous(tl.multiple_of(rn % N_LOAD, BLOCK_N), BLOCK_N)
    else:
        rbn = rn % N_LOAD
    k_start = split * k_per_split
    k_len = tl.minimum(k_per_split, K - k_start)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + ram[:, None] * stride_am + (k_start + rk)[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + (k_start + rk)[:, None] * stride_bk + rbn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, tl.cdiv(k_len, BLOCK_K)):
        if EVEN_K:  # every block whole: no mask
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = k_len - i * BLOCK_K
            a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        # 2-byte operands: tensor cores whatever the input precision; "ieee" says no TF32
        acc = tl.dot(a, b, acc, input_precision="ieee")
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


def _gemm_tc(a, b, out, bias, alpha, beta, M, N, K, B, batched, tile, SPLIT_K, num_warps,
             num_stages):
    """`gemm` for fp16/bf16 operands (`_gemm_tc_kernel`): the same tiles, split K and
    epilogue, the output in the operands' dtype (fp32 partial sums when K is split). sm_90 PTX
    at fp16, 67x129x95: `_gemm_kernel` had no cp.async (one shared buffer: not pipelined);
    this, on the padded copies at 128x256x64, 36 cp.async in three stages, no spills."""
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = tile
    n_load = N  # the columns of B that may be read: a padded copy's zeroed ones too
    if K % 16 or _gemm_unaligned(a) or _gemm_unaligned(b):
        # 2-byte loads cannot be cp.async copies: where Triton cannot prove 16-byte rows and
        # K blocks (K or a row stride not a multiple of 16 elements) the loop is not pipelined
        # at all (sm_90 PTX: no cp.async, one shared buffer). Zero-padded copies (K and the
        # rows to multiples of 16; zero products add nothing) cost O(MK + KN) against O(MNK).
        a, b = _gemm_padded(a, K, -1), _gemm_padded(b, K, -2)
        K, n_load = a.shape[-1], b.stride(-2)
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
    meta = dict(
        EVEN_K=K % BLOCK_K == 0, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
        HINT_M=M % 16 == 0, HINT_N=n_load % 16 == 0, num_warps=num_warps, num_stages=num_stages,
    )
    if splits == 1:
        _gemm_tc_kernel[grid](
            a, b, out, bias_arg, M, N, n_load, K, k_per_split, *sa, *sb, 0, *sc, *sbias, alpha, beta,
            HAS_BIAS=bias is not None, PARTIAL=False, **meta,
        )
        return out
    ws = torch.empty((splits, B, M, N), dtype=torch.float32, device=a.device)
    _gemm_tc_kernel[grid](
        a, b, ws, bias_arg, M, N, n_load, K, k_per_split, *sa, *sb, *ws.stride(), *sbias, alpha, beta,
        HAS_BIAS=False, PARTIAL=True, **meta,
    )
    _gemm_split_reduce_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64), B)](
        ws, out, bias_arg, M, N, splits, *ws.stride(), *sc, *sbias, alpha, beta,
        HAS_BIAS=bias is not None, BLOCK_M=64, BLOCK_N=64, num_warps=4,
    )
    return out


def _gemm_unaligned(t):
    """Whether `t`'s rows are not 16-element aligned (unit stride along one dimension, the
    other's stride not a multiple of 16; a broadcast batch of stride 0 is aligned)."""
    s_row, s_col = t.stride(-2), t.stride(-1)
    return (s_col == 1 and s_row % 16 != 0) or (s_row == 1 and s_col % 16 != 0)


def _gemm_padded(t, K, k_dim):
    """`t` copied into a zeroed buffer with K (its dimension `k_dim`) rounded up to a multiple
    of 16 and its rows (the last dimension) 16-element aligned: row-major, unit column stride."""
    kp = triton.cdiv(K, 16) * 16
    shape = list(t.shape)
    shape[k_dim] = kp
    cols = shape[-1]
    buf = torch.zeros((*shape[:-1], triton.cdiv(cols, 16) * 16), dtype=t.dtype, device=t.device)
    view = buf[..., :cols]
    index = [slice(None)] * t.dim()
    index[k_dim] = slice(0, K)
    view[tuple(index)].copy_(t)
    return view
'''


def gemm_source(precision: str = "fp32") -> str:
    """The template's source for a draft at `precision`: `GEMM_SOURCE` itself at fp32 (fp32
    drafts as before), and for bf16/fp16 the same with `gemm` sending 2-byte operands to the
    tensor-core kernel (`GEMM_TC_SOURCE`)."""
    if precision not in HALF_PRECISIONS:
        return GEMM_SOURCE
    assert GEMM_SOURCE.count(_TC_DISPATCH_AFTER) == 1
    head = GEMM_SOURCE.replace(_TC_DISPATCH_AFTER, _TC_DISPATCH_AFTER + _TC_DISPATCH)
    return head.rstrip("\n") + "\n\n" + GEMM_TC_SOURCE


def config_for(precision: str = "fp32") -> dict:
    """The call-site launch parameters a draft at `precision` starts from."""
    return dict(HALF_CONFIG if precision in HALF_PRECISIONS else DEFAULT_CONFIG)


def call_for(op: str, args: list[str], kwargs: dict[str, str], config: dict | None = None) -> str:
    """The `gemm(...)` call (source text) replacing Inductor's `extern_kernels.<op>(...)`.

    `args`/`kwargs` are the extern call's arguments as source text: `mm(a, b, out=)`,
    `addmm(bias, a, b, alpha=, beta=, out=)`, `bmm(a, b, out=)`, `baddbmm(bias, a, b, ...)`.
    The launch parameters are written at the call site, one set per GEMM, for the tuner.
    """
    config = {**DEFAULT_CONFIG, **(config or {})}
    if op in ("mm", "bmm"):
        a, b = args[:2]
        parts = [a, b]
    elif op in ("addmm", "bias_addmm", "baddbmm"):
        bias, a, b = args[:3]
        parts = [a, b, f"bias={bias}"]
        for name in ("alpha", "beta"):
            if name in kwargs:
                parts.append(f"{name}={kwargs[name]}")
    else:
        raise ValueError(f"no GEMM template for {op}")
    if "out" in kwargs:
        parts.append(f"out={kwargs['out']}")
    parts += [f"{k}={v!r}" for k, v in config.items()]
    return f"gemm({', '.join(parts)})"


GEMM_OPS = frozenset({"mm", "addmm", "bias_addmm", "bmm", "baddbmm"})
"""Inductor extern calls the template replaces. `bias_addmm` is Inductor's addmm whose bias is a
row broadcast to the output (stride 0 over rows; a Linear's bias on CUDA), which cuBLASLt takes
as a 1-D bias; the template reads it through its strides like any other bias."""
