"""The split (bf16x3) implicit-GEMM convolution, `triton_convolution`'s `X_SPLIT` family: the
input and the weights split into bf16 high and low parts in memory first, the input
channels-last and zero-padded (`_conv_split_input_kernel`, `_conv_split_weight_kernel`), then
a GEMM on those (`_conv_split_kernel`) with unmasked 16-byte loads and three bf16 products a
step; with `precision="ieee"` the same layout in fp32, unsplit. The compiler drafter fuses a
pointwise epilogue into a copy of `_conv_split_kernel` (tools/draft/conv_epilogue.py reads its
`epilogue` markers).

Its code runs as a copy inside candidate files (a verification's or a draft's job), between the
`candidate source` markers; `tools.triton_conv.candidate_source` copies it with the others.
"""

from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

from tools.kernels.conv_common import (
    _conv_params,
    _conv_phase,
    _conv_phase_taps,
    _conv_rows,
    _conv_span,
    _conv_tap,
    _conv_tap_offset,
)


# --- candidate source begin ---
@triton.jit
def _bf16_round(v):
    """v (fp32) rounded to the nearest bf16 value (ties to even), held in fp32: exact when
    stored to a bf16 tensor, and the same numbers under the interpreter (no bf16 there)."""
    bits = v.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536  # 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _conv_split_input_kernel(
    x_ptr, hi_ptr, lo_ptr, C_in_g, D, H, W, PD, PH, PW, lo_d, lo_h, lo_w, CGP, GC, S,
    xs_n, xs_c, xs_d, xs_h, xs_w, FOLD, fold_dw,
    IDX64: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr, EXACT: tl.constexpr,
):  # fmt: skip
    """x (N, C, D, H, W), any strides, as two zero-padded channels-last copies
    (N, PD, PH, PW, groups, CGP): hi = x rounded to bf16, lo = x - hi rounded to bf16. The
    padding (lo_* before each spatial dimension, the rest after; channels up to CGP) is zeros,
    so the split GEMM's loads need no masks. FOLD > 1 (few input channels): a position's
    channels are the FOLD W-taps' channels, (kw, c) at kw * C_in_g + c, read fold_dw * kw
    further along W, so the GEMM visits one tap where there were FOLD (im2col along W). A
    [BLOCK_S, BLOCK_C] tile is read along the positions and written along the channels.
    EXACT: x itself, in fp32, in `hi_ptr` (no low part): the layout without the split."""
    pid_s = tl.program_id(0)
    pid_c = tl.program_id(1)
    nb = tl.program_id(2)
    if IDX64:
        nb = nb.to(tl.int64)
    s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)  # padded positions
    cc = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)  # (group, padded channel)
    g = cc // CGP
    c = cc % CGP
    pw = s % PW
    t = s // PW
    ph = t % PH
    pd = t // PH
    kw = c // C_in_g  # the folded W-tap (0 without a fold)
    c = c % C_in_g
    i_d = pd - lo_d
    i_h = ph - lo_h
    i_w = (pw - lo_w)[:, None] + (kw * fold_dw)[None, :]
    s_ok = (s < S) & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H)
    ok_in = s_ok[:, None] & (i_w >= 0) & (i_w < W)
    c_ok = (kw < FOLD) & (cc < GC)
    src = nb * xs_n + (g * C_in_g + c)[None, :] * xs_c
    src = src + (i_d * xs_d + i_h * xs_h)[:, None] + i_w * xs_w
    v = tl.load(x_ptr + src, mask=ok_in & c_ok[None, :], other=0.0).to(tl.float32)
    dst = nb * S * GC + s[:, None] * GC + cc[None, :]
    ok = (s < S)[:, None] & (cc < GC)[None, :]
    if EXACT:
        tl.store(hi_ptr + dst, v, mask=ok)
    else:
        hi = _bf16_round(v)
        lo = _bf16_round(v - hi)
        tl.store(hi_ptr + dst, hi, mask=ok)
        tl.store(lo_ptr + dst, lo, mask=ok)


@triton.jit
def _conv_split_weight_kernel(
    w_ptr, hi_ptr, lo_ptr, n, C_in_g, C_out_g, CGP, COP, KH, KW, TAPS,
    ws_g, ws_co, ws_ci, ws_d, ws_h, ws_w, FOLD,
    BLOCK: tl.constexpr, EXACT: tl.constexpr,
):  # fmt: skip
    """The weights as [group, tap, CGP, COP] bf16 high and low parts, zero-padded in both
    channel dimensions, output channels contiguous (the split GEMM's weight tile). FOLD > 1:
    the taps are (kd, kh) only (KW is 1 here) and input channel kw * C_in_g + c holds W-tap kw's
    channel c, as `_conv_split_input_kernel` folds them."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    co = offs % COP
    t = offs // COP
    ci = t % CGP
    t = t // CGP
    tap = t % TAPS
    g = t // TAPS
    kd = tap // (KH * KW)
    kh = (tap // KW) % KH
    kw = tap % KW + ci // C_in_g  # a folded W-tap (FOLD > 1, KW 1) or the tap's
    c = ci % C_in_g
    src = g * ws_g + co * ws_co + c * ws_ci + kd * ws_d + kh * ws_h + kw * ws_w
    real = ok & (co < C_out_g) & (ci < C_in_g * FOLD)
    w = tl.load(w_ptr + src, mask=real, other=0.0).to(tl.float32)
    if EXACT:  # the weights themselves, in fp32 (no low part)
        tl.store(hi_ptr + offs, w, mask=ok)
    else:
        hi = _bf16_round(w)
        tl.store(hi_ptr + offs, hi, mask=ok)
        tl.store(lo_ptr + offs, _bf16_round(w - hi), mask=ok)


@triton.jit
def _conv_split_kernel(
    xh_ptr, xl_ptr, wh_ptr, wl_ptr, b_ptr, y_ptr,
    M, CGP, COP, C_out_g, OD, OH, OW, JD, JH, JW, KD, KH, KW,
    sd, sh, sw, pd, ph, pw, dd, dh, dw, lo_d, lo_h, lo_w, step_d, step_h, step_w,
    xs_n, xs_d, xs_h, xs_w,
    ys_n, ys_c, ys_d, ys_h, ys_w,
    HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, IDX64: tl.constexpr,
    CARRIER_FP32: tl.constexpr, Y_CONTIG: tl.constexpr, EXACT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PART_SUM: tl.constexpr,
):  # fmt: skip
    """Implicit GEMM in bf16x3 on operands split in memory beforehand
    (`_conv_split_input_kernel`, `_conv_split_weight_kernel`): acc += a_hi b_hi + a_hi b_lo +
    a_lo b_hi, three bf16 products with fp32 accumulation (a_lo b_lo, ~2**-16 relative, left
    out, as tl.dot's bf16x3 does). The input is channels-last and zero-padded, the weights
    padded to CGP x COP, so every load is unmasked and 16-byte wide (a row's BLOCK_K channels
    are contiguous) and nothing is split or converted in the loop. Rows past M are clamped to
    the last (their stores are masked). Transposed: one output phase (o mod stride, per
    dimension) a program, visiting only the taps that hit it, as `_conv_gemm_kernel` does.
    CARRIER_FP32: the parts are held in fp32 tensors (the interpreter has no bf16), the same
    values, multiplied exactly. EXACT: the operands are the fp32 values themselves (no parts),
    one fp32 product a step (tl.dot "ieee": FMA, no tensor cores), for the small reductions
    (few channels and taps) where three bf16 products are less exact than the problem's
    reference and the FMA work is small.
    PART_SUM: each step's three products are summed from zero and then added to the running sum
    in fp32, as tl.dot's own bf16x3 does, instead of going into the running sum inside the MMA.
    The likely cause (not measured apart from this): a tensor core's accumulation is not IEEE,
    it truncates what it aligns to a large accumulator, so over a long reduction the small
    products' bits are lost step after step. level2/77 (8,000 products an output) measured X_SPLIT at 47x cuDNN fp32's error against 8x
    for tl.dot's bf16x3 on the same call (session 12)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    g = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < M
    # rows past M decoded as the last one: in range for the loads, masked at the store
    jd, jh, jw, nb = _conv_rows(tl.minimum(offs_m, M - 1), JD, JH, JW)  # forward: JD = OD...
    if TRANSPOSED:
        g, ph_d, ph_h, ph_w = _conv_phase(g, sd, sh, sw)
        od = ph_d + sd * jd
        oh = ph_h + sh * jh
        ow = ph_w + sw * jw
        m_ok = m_ok & (od < OD) & (oh < OH) & (ow < OW)
        base_d = jd
        base_h = jh
        base_w = jw
        kd0, nt_d = _conv_phase_taps(ph_d, pd, dd, sd, KD, step_d)
        kh0, nt_h = _conv_phase_taps(ph_h, ph, dh, sh, KH, step_h)
        kw0, nt_w = _conv_phase_taps(ph_w, pw, dw, sw, KW, step_w)
    else:
        ph_d = 0
        ph_h = 0
        ph_w = 0
        od = jd
        oh = jh
        ow = jw
        base_d = jd * sd
        base_h = jh * sh
        base_w = jw * sw
        kd0 = 0
        kh0 = 0
        kw0 = 0
        nt_d = KD
        nt_h = KH
        nt_w = KW
    if IDX64:
        nb = nb.to(tl.int64)
    x_row = nb * xs_n + base_d * xs_d + base_h * xs_h + base_w * xs_w + g * CGP  # [BLOCK_M]
    ck = tl.arange(0, BLOCK_K)
    w_cols = wh_ptr + offs_n[None, :]
    wl_cols = wl_ptr + offs_n[None, :]
    taps = KD * KH * KW
    n_cb = CGP // BLOCK_K
    n_iter = nt_d * nt_h * nt_w * n_cb
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for it in range(0, n_iter):
        kd, kh, kw, cb = _conv_tap(it, n_cb, kd0, kh0, kw0, nt_h, nt_w, step_d, step_h, step_w)
        c0 = cb * BLOCK_K
        # in the padded input: the offset from the row's base, plus the zeros before (forward:
        # the padding, so o*s + k*d)
        off_d = _conv_tap_offset(ph_d, pd, kd, dd, sd, TRANSPOSED) + lo_d
        off_h = _conv_tap_offset(ph_h, ph, kh, dh, sh, TRANSPOSED) + lo_h
        off_w = _conv_tap_offset(ph_w, pw, kw, dw, sw, TRANSPOSED) + lo_w
        x_off = x_row + (off_d * xs_d + off_h * xs_h + off_w * xs_w + c0)
        x_off = tl.multiple_of(x_off, 16)  # every stride and CGP are multiples of 16
        a_off = x_off[:, None] + ck[None, :]
        k_row = ((g * taps + (kd * KH + kh) * KW + kw) * CGP + c0 + ck) * COP
        a_hi = tl.load(xh_ptr + a_off)
        b_hi = tl.load(w_cols + k_row[:, None])
        if EXACT:
            acc = tl.dot(a_hi, b_hi, acc, input_precision="ieee")
        else:
            a_lo = tl.load(xl_ptr + a_off)
            b_lo = tl.load(wl_cols + k_row[:, None])
            if PART_SUM:
                if CARRIER_FP32:
                    part = tl.dot(a_hi, b_lo, input_precision="ieee")
                    part = tl.dot(a_lo, b_hi, part, input_precision="ieee")
                    part = tl.dot(a_hi, b_hi, part, input_precision="ieee")
                else:
                    part = tl.dot(a_hi, b_lo)
                    part = tl.dot(a_lo, b_hi, part)
                    part = tl.dot(a_hi, b_hi, part)
                acc += part
            elif CARRIER_FP32:
                acc = tl.dot(a_hi, b_lo, acc, input_precision="ieee")
                acc = tl.dot(a_lo, b_hi, acc, input_precision="ieee")
                acc = tl.dot(a_hi, b_hi, acc, input_precision="ieee")
            else:
                acc = tl.dot(a_hi, b_lo, acc)
                acc = tl.dot(a_lo, b_hi, acc)
                acc = tl.dot(a_hi, b_hi, acc)
    n_ok = offs_n < C_out_g
    if HAS_BIAS:
        bias = tl.load(b_ptr + g * C_out_g + offs_n, mask=n_ok, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    y_row = nb * ys_n + od * ys_d + oh * ys_h + ow * ys_w
    if Y_CONTIG:  # as in _conv_gemm_kernel
        y_row = tl.max_contiguous(y_row, BLOCK_M)
    y_col = (g * C_out_g + offs_n) * ys_c
    # --- epilogue begin (tools/draft/conv_epilogue.py replaces this store in a fused copy) ---
    tl.store(
        y_ptr + y_row[:, None] + y_col[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=m_ok[:, None] & n_ok[None, :],
    )
    # --- epilogue end ---


def _split_configs() -> list:
    """Tiles for the split (bf16x3) GEMM: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages). Its
    operands are bf16, a stage of a 128x128x32 tile is 32 KB of shared memory (A and B, high
    and low parts). BLOCK_K 16 ones for groups whose padded channels are not a multiple of 32
    (16 input channels, or fewer padded to 16); narrow ones for few output channels."""
    shapes = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (128, 64, 32, 8, 4), (64, 128, 32, 4, 4)]
    shapes += [(128, 32, 32, 4, 4), (64, 64, 32, 4, 4), (256, 32, 32, 8, 3), (128, 16, 32, 4, 4)]
    shapes += [(128, 128, 16, 8, 4), (128, 64, 16, 4, 4), (128, 32, 16, 4, 4)]
    shapes += [(256, 32, 16, 8, 4), (128, 16, 16, 4, 4), (256, 16, 16, 8, 4)]
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
        for m, n, k, w, s in shapes
    ]


def _prune_split_configs(configs, named_args, **kwargs):
    """At most `SPLIT_AUTOTUNE_MAX` tiles whose BLOCK_K divides the padded channels (32 where it
    does), from a quarter to twice as wide as a group's output channels: every verification and
    timing process compiles each (session 10's level-2 run: about 210 s a convolution problem
    with 8 jobs a GPU and all of them)."""
    width = max(16, triton.next_power_of_2(named_args["C_out_g"]))
    bk = 32 if named_args["CGP"] % 32 == 0 else 16
    kept = [
        c
        for c in configs
        if c.kwargs["BLOCK_K"] == bk and width // 4 <= c.kwargs["BLOCK_N"] <= 2 * width
    ]
    return kept[:SPLIT_AUTOTUNE_MAX] or [c for c in configs if c.kwargs["BLOCK_K"] == 16][:1]


SPLIT_AUTOTUNE_MAX = 5


_conv_split_kernel_tuned = triton.autotune(
    configs=_split_configs(),
    key=["M", "CGP", "C_out_g", "KD", "KH", "KW", "sd", "sh", "sw"],
    prune_configs_by={"early_config_prune": _prune_split_configs},
)(_conv_split_kernel)


def _conv_split_pads(size, out, k, s, p, d, transposed):
    """(zeros before, padded size) of one spatial dimension for the split GEMM, whose padded
    input index is o*s + k*d (forward; the padding is p) or j + (r + p - k*d) / s + before
    (transposed, output o = r + s*j, the taps that hit phase r), always in range."""
    if not transposed:
        return p, max(p + size, (out - 1) * s + (k - 1) * d + 1)
    offs = [(r + p - t * d) // s for r in range(s) for t in range(k) if (r + p - t * d) % s == 0]
    lo = max(0, -min(offs)) if offs else 0
    top = triton.cdiv(out, s) - 1 + (max(offs) if offs else 0) + lo
    return lo, max(lo + size, top + 1)


def _conv_split_launch(
    x, xs, weight, ws, bias, y, ys, g, transposed, tile, epilogue=None, exact=False,
    part_sum=False,
):  # fmt: skip
    """`triton_convolution`'s X_SPLIT path: split copies of the input and weights, then the
    split GEMM (see `_conv_split_kernel`). `g`: the sizes (`_conv_geometry`). `exact`: fp32
    copies in the same layout, no split, one fp32 (FMA) product a step. `part_sum`: the
    kernel's PART_SUM. The steps: the padded layout (`_conv_split_layout`), the input's copies
    (`_conv_split_input`), the weights' (`_conv_split_weights`), the GEMM (`_conv_split_gemm`)."""
    shapes = dict(groups=g["groups"], C_in_g=g["C_in_g"], C_out_g=g["C_out_g"], out=g["out"])
    conv = _conv_params(g)
    interpret = os.environ.get("TRITON_INTERPRET", "0") == "1"
    # the interpreter has no bf16; the exact path keeps the fp32 values
    dtype = torch.float32 if interpret or exact else torch.bfloat16
    lay = _conv_split_layout(x, weight, shapes, conv, transposed, tile[1])
    xh, xl, idx64 = _conv_split_input(x, xs, y, lay, dtype, exact)
    wh, wl = _conv_split_weights(weight, ws, lay, dtype, exact)
    _conv_split_gemm(xh, xl, wh, wl, bias, y, ys, lay, transposed, tile, epilogue, exact,
                     part_sum, idx64)  # fmt: skip


def _conv_split_layout(x, weight, shapes, conv, transposed, bn):
    """The split GEMM's layout: each spatial dimension's zeros before and padded size, the W
    taps folded into the channels where that at least halves the padded channels a step
    multiplies (`fold`; the GEMM then sees one W tap, `dw_real` the copy's dilation), the
    padded channels a group (`CGP`, of 16) and output channels (`COP`, of the tile's width)."""
    sd, sh, sw, pd, ph, pw, dd, dh, dw = conv
    C_in_g, C_out_g = shapes["C_in_g"], shapes["C_out_g"]
    OD, OH, OW = shapes["out"]
    nd = x.dim() - 2
    D, H, W = [1] * (3 - nd) + list(x.shape[2:])
    KD, KH, KW = [1] * (3 - nd) + list(weight.shape[2:])
    pads = [
        _conv_split_pads(i, o, k, s, p, d, transposed)
        for i, o, k, s, p, d in zip(
            (D, H, W), (OD, OH, OW), (KD, KH, KW), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw)
        )
    ]
    # Few input channels: fold the W-taps into the channels (im2col along W) where that at
    # least halves the padded channels a (kd, kh) step multiplies (3 channels, 3 taps: 16
    # against 3 x 16). Forward convolutions only (a transposed one's taps depend on the phase).
    fold = 1
    if not transposed and KW > 1:
        plain, folded = KW * triton.cdiv(C_in_g, 16) * 16, triton.cdiv(KW * C_in_g, 16) * 16
        fold = KW if 2 * folded <= plain else 1
    if fold > 1:  # the GEMM sees one W-tap; the copy reads the others
        pads[2] = _conv_split_pads(W, OW, 1, sw, pw, dw, transposed)
        KW, dw_real, dw = 1, dw, 1
        conv = (sd, sh, sw, pd, ph, pw, dd, dh, dw)
    else:
        dw_real = dw
    CGP = triton.cdiv(fold * C_in_g, 16) * 16
    COP = triton.cdiv(C_out_g, max(128, bn or 0)) * max(128, bn or 0)
    return dict(
        shapes, N=x.shape[0], size=(D, H, W), k=(KD, KH, KW), conv=conv, pads=pads, fold=fold,
        dw_real=dw_real, CGP=CGP, COP=COP, GC=shapes["groups"] * CGP,
    )  # fmt: skip


def _conv_split_input(x, xs, y, lay, dtype, exact):
    """The input's split copies (`_conv_split_input_kernel`): channels-last, zero-padded,
    high and low parts (one fp32 copy when `exact`). Returns (high, low, whether offsets need
    int64)."""
    (lo_d, PD), (lo_h, PH), (lo_w, PW) = lay["pads"]
    D, H, W = lay["size"]
    N, CGP, GC = lay["N"], lay["CGP"], lay["GC"]
    S = PD * PH * PW
    xh = torch.empty((N, PD, PH, PW, GC), dtype=dtype, device=x.device)
    xl = xh if exact else torch.empty_like(xh)  # exact: no low part (never read)
    idx64 = max(_conv_span(x), xh.numel(), _conv_span(y)) >= 2**31
    # 2048 elements a program, every one of them a real (group, padded channel): 16 channels
    # wide where the padded channels are not a multiple of 32 (3 input channels padded to 16:
    # a 32-wide block left half its lanes masked; session 11's profiles had this copy at 1.0
    # TB/s and 32-37% of level2/6, 24, 48, 79)
    block_c = 32 if GC % 32 == 0 else 16
    block_s = 2048 // block_c
    grid_x = (triton.cdiv(S, block_s), triton.cdiv(GC, block_c), N)
    _conv_split_input_kernel[grid_x](
        x, xh, xl, lay["C_in_g"], D, H, W, PD, PH, PW, lo_d, lo_h, lo_w, CGP, GC, S, *xs,
        lay["fold"], lay["dw_real"],
        IDX64=idx64, BLOCK_C=block_c, BLOCK_S=block_s, EXACT=exact, num_warps=4,
    )  # fmt: skip
    return xh, xl, idx64


def _conv_split_weights(weight, ws, lay, dtype, exact):
    """The weights' split copies (`_conv_split_weight_kernel`), padded to `CGP` x `COP` a
    group and tap: (high, low; one fp32 copy when `exact`)."""
    KD, KH, KW = lay["k"]
    CGP, COP = lay["CGP"], lay["COP"]
    taps = KD * KH * KW
    n = lay["groups"] * taps * CGP * COP
    wh = torch.empty(n, dtype=dtype, device=weight.device)
    wl = wh if exact else torch.empty_like(wh)
    _conv_split_weight_kernel[(triton.cdiv(n, 1024),)](
        weight, wh, wl, n, lay["C_in_g"], lay["C_out_g"], CGP, COP, KH, KW, taps, *ws,
        lay["fold"], BLOCK=1024, EXACT=exact,
    )  # fmt: skip
    return wh, wl


def _conv_split_gemm(xh, xl, wh, wl, bias, y, ys, lay, transposed, tile, epilogue, exact,
                     part_sum, idx64):  # fmt: skip
    """The split GEMM (`_conv_split_kernel`, or an epilogue's copy of it) on the split copies:
    the tuner's tile, or in the interpreter one small tile, else autotuned on the GPU."""
    sd, sh, sw, pd, ph, pw, dd, dh, dw = lay["conv"]
    (lo_d, PD), (lo_h, PH), (lo_w, PW) = lay["pads"]
    N, groups, C_out_g, CGP, COP, GC = (
        lay[k] for k in ("N", "groups", "C_out_g", "CGP", "COP", "GC")
    )
    OD, OH, OW = lay["out"]
    KD, KH, KW = lay["k"]
    S = PD * PH * PW
    interpret = os.environ.get("TRITON_INTERPRET", "0") == "1"
    bm, bn, bk, warps, stages = tile
    phases = sd * sh * sw if transposed else 1
    if transposed:
        JD, JH, JW = triton.cdiv(OD, sd), triton.cdiv(OH, sh), triton.cdiv(OW, sw)
        steps = [s // math.gcd(s, d) for s, d in ((sd, dd), (sh, dh), (sw, dw))]
    else:
        JD, JH, JW = OD, OH, OW
        steps = [1, 1, 1]
    M = N * JD * JH * JW
    has_bias = bias is not None
    args = [xh, xl, wh, wl, bias if has_bias else y, y, M, CGP, COP, C_out_g, OD, OH, OW]
    args += [JD, JH, JW, KD, KH, KW, *lay["conv"], lo_d, lo_h, lo_w, *steps]
    args += [S * GC, PH * PW * GC, PW * GC, GC, *ys]
    flags = dict(
        HAS_BIAS=has_bias,
        TRANSPOSED=bool(transposed),
        IDX64=idx64,
        CARRIER_FP32=interpret,
        Y_CONTIG=ys[4] == 1 and ys[1] != 1 and not transposed,
        EXACT=exact,
        PART_SUM=part_sum,
    )
    kernel, tuned = _conv_split_kernel, _conv_split_kernel_tuned
    if epilogue is not None:  # a fused copy: the epilogue's arguments after the GEMM's
        kernel, tuned, extra, consts = epilogue
        args += list(extra)
        flags.update(consts)
    if interpret or tile != (None,) * 5:
        if interpret and tile == (None,) * 5:
            bm, bn, bk = 32, 16 if C_out_g <= 16 else 32, 16
        bm, bn = bm or 128, bn or 64
        bk = bk if bk and CGP % bk == 0 else 16
        grid = (triton.cdiv(M, bm), triton.cdiv(C_out_g, bn), groups * phases)
        kernel[grid](
            *args, **flags, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
            num_warps=warps or 8, num_stages=stages or 3,
        )  # fmt: skip
        return

    def grid(meta):
        return (
            triton.cdiv(M, meta["BLOCK_M"]),
            triton.cdiv(C_out_g, meta["BLOCK_N"]),
            groups * phases,
        )

    tuned[grid](*args, **flags)


# --- candidate source end ---
