"""This project's Triton convolutions, for candidates that must not call a library conv.

`triton_convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)` has `torch.convolution`'s signature and meaning for 1D/2D/3D inputs: forward and
transposed, stride, padding, dilation, output_padding, groups (depthwise included), bias, any
input/weight strides (channels-last too). Keyword-only knobs for the tuner (tools.compile.tune
`conv_variants`): `precision`, `BLOCK_M/N/K`, `num_warps`, `num_stages`, `SPLIT_W`, `PACK_W`, `X_LAST`.
Three kernels:

- `_conv_gemm_kernel`: implicit GEMM. Rows are output positions (n, od, oh, ow), columns the
  output channels of one group (program axis 2), the reduction runs over (kernel tap, input
  channel) and is gathered from the input on the fly. With at least 16 input channels a group it
  is ONE flat, software-pipelined loop over (tap, channel block): the tap (a scalar) is decoded
  from the loop counter, the input index is a per-row base computed once plus a scalar offset,
  so the body is two loads, a few compares and the MMA. With fewer channels (the 3-channel first
  layer) the (channel, tap) pairs are one flat reduction axis, so a block is not mostly padding.
  Transposed convolution is the same GEMM with a gather: output o takes input
  i = (o + p - k*d) / s where that is a whole number in range; strided, one output phase
  (o mod s) a program, which visits only the taps that hit it (they are s / gcd(s, d) apart).
  For NCHW tensors the input tile is loaded and the output tile stored output-position-fastest
  (contiguity hints; Triton otherwise laid both out channel-fastest, 32 cache lines a warp).
- `_conv_pack_kernel`: the weights repacked [group, tap, C_in, C_out], output channels
  contiguous (coalesced weight tiles), and for `SPLIT_W` split into TF32 high and low parts.
- `_conv_direct_kernel`: one output channel a program, tap by tap, contiguous loads and scalar
  weights, for groups of fewer than `DIRECT_MAX_COUT_G` output channels (depthwise), where a
  tl.dot tile (at least 16 wide) would be mostly empty.

Precision: fp32 inputs multiply with `tl.dot(..., input_precision="tf32x3")` by default (three
TF32 products per fp32 product, error ~1e-6 relative; plain TF32 is ~1e-3 and fails fp32's atol
1e-4; issue 15 measured tf32x3 faster than and as accurate as cuBLAS's fp32 GEMM on the H200).
The tuner may try `CONV_PRECISIONS` (bf16x3, ieee, tf32): verification at the problem's
tolerance decides, and the report names the precision. fp16/bf16 inputs use their native dot.
Accumulation is fp32. The interpreter's tl.dot is exact (numpy) and has no bf16x3 (run as ieee).

sm_90 (ptxas -v, tf32x3, 128x64x32 at 8 warps), before -> after this layout (flat loop, row-
fastest input loads and output stores, repacked weights): conv1d 235 -> 121 registers;
transposed 2D 250 -> 140; transposed 3D 255 + 20 bytes spilled -> 124, none; pointwise
170 -> 124; 3-channel 3D stem 255 + 48 bytes spilled -> 254, none. Not yet timed on a GPU.

The code between the `candidate source` markers is self-contained (math, os, torch, triton,
tl): the compiler drafter (`tools/draft/`, `rewrite.convolutions_in_triton`) copies it into a candidate file with
`candidate_source()`, so a candidate never imports `tools/`. On a GPU the GEMM kernel is
autotuned over a few tile configs unless the call fixes one; under `TRITON_INTERPRET=1` it runs
one small fixed config unless the call gives one.
"""

from __future__ import annotations

# --- candidate source begin (copied verbatim into compiler drafts) ---
import math
import os

import torch
import triton
import triton.language as tl

DIRECT_MAX_COUT_G = 4  # output channels a group below which the direct kernel is used
TAP_LOOP_MIN_CIN_G = 16  # input channels a group from which the GEMM loops tap by tap
CONV_PRECISIONS = ("tf32x3", "bf16x3", "ieee", "tf32")
"""tl.dot input precisions for fp32 inputs: tf32x3 (three TF32 products, ~fp32 accuracy, the
default), bf16x3 (three bf16 products, ~2**-16 relative: half tf32x3's tensor-core time),
ieee (FMA, no tensor cores), tf32 (one TF32 product, ~1e-3: only where the tolerance allows)."""


@triton.jit
def _conv_in_pos(o, k, stride, pad, dil, size, TRANSPOSED: tl.constexpr):
    """Input index read by output index `o` at kernel tap `k`, and whether it exists."""
    if TRANSPOSED:
        t = o + pad - k * dil
        tt = tl.where(t >= 0, t, 0)  # // and % of negatives differ between C and numpy
        i = tt // stride
        ok = (t >= 0) & (tt % stride == 0) & (i < size)
    else:
        i = o * stride - pad + k * dil
        ok = (i >= 0) & (i < size)
    return tl.where(ok, i, 0), ok


@triton.jit
def _conv_dot(a, b, b_lo, acc, PRECISION: tl.constexpr, SPLIT_W: tl.constexpr):
    """acc + a @ b. SPLIT_W: tf32x3 by hand, b = the weights' TF32 part and b_lo the rest, both
    split in memory beforehand (`_conv_pack_kernel`), so they go from global memory to shared
    memory as they are; tl.dot's own tf32x3 splits B in registers and writes both parts back
    to shared memory every step. a_lo * b_lo (~2**-22 relative) is left out, as tf32x3 does."""
    if SPLIT_W:
        a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)  # 0xFFFFE000
        a_lo = a - a_hi
        acc = tl.dot(a_lo, b, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b_lo, acc, input_precision="tf32")
        acc = tl.dot(a_hi, b, acc, input_precision="tf32")
    else:
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    return acc


@triton.jit
def _conv_pack_kernel(
    w_ptr, hi_ptr, lo_ptr, n, C_in_g, C_out_g, KH, KW, TAPS,
    ws_g, ws_co, ws_ci, ws_d, ws_h, ws_w,
    SPLIT: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """The weights as [group, tap, input channel, output channel], output channels contiguous,
    so the GEMM's [BLOCK_K, BLOCK_N] weight tile is coalesced (torch's layouts put output
    channels C_in * taps apart). SPLIT: hi = w with its 13 low mantissa bits cleared (exact
    in TF32) and lo = w - hi (exact), for `_conv_dot`'s tf32x3 by hand."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    co = offs % C_out_g
    t = offs // C_out_g
    ci = t % C_in_g
    t = t // C_in_g
    tap = t % TAPS
    g = t // TAPS
    kd = tap // (KH * KW)
    kh = (tap // KW) % KH
    kw = tap % KW
    src = g * ws_g + co * ws_co + ci * ws_ci + kd * ws_d + kh * ws_h + kw * ws_w
    w = tl.load(w_ptr + src, mask=ok, other=0.0)
    if SPLIT:
        hi = (w.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
        tl.store(hi_ptr + offs, hi, mask=ok)
        tl.store(lo_ptr + offs, w - hi, mask=ok)
    else:
        tl.store(hi_ptr + offs, w, mask=ok)


@triton.jit
def _conv_channels_last_kernel(
    x_ptr, y_ptr, C, S, H, W, xs_n, xs_c, xs_d, xs_h, xs_w,
    IDX64: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
):  # fmt: skip
    """x (N, C, D, H, W), any strides, copied to y (N, D, H, W, C) contiguous: the implicit
    GEMM's input tile is then channel-fastest (`X_LAST`). A [BLOCK_C, BLOCK_S] tile is read
    along the spatial positions and written along the channels."""
    pid_s = tl.program_id(0)
    pid_c = tl.program_id(1)
    nb = tl.program_id(2)
    if IDX64:
        nb = nb.to(tl.int64)
    s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    w = s % W
    t = s // W
    h = t % H
    d = t // H
    ok = (c < C)[:, None] & (s < S)[None, :]
    src = nb * xs_n + c[:, None] * xs_c + (d * xs_d + h * xs_h + w * xs_w)[None, :]
    v = tl.load(x_ptr + src, mask=ok, other=0.0)
    dst = nb * S * C + s[None, :] * C + c[:, None]
    tl.store(y_ptr + dst, v, mask=ok)


@triton.jit
def _conv_tap_start(r, pad, dil, stride, KSIZE):
    """First kernel tap k (0 <= k < KSIZE) with r + pad - k * dil a multiple of stride, and how
    many taps hit phase r (taps that hit are `step` = stride / gcd(stride, dil) apart)."""
    k0 = tl.zeros([], tl.int32) + KSIZE
    for k in range(0, KSIZE):
        t = r + pad - k * dil
        hit = ((t % stride) + stride) % stride == 0  # the same for C's and numpy's %
        k0 = tl.where(hit & (k0 == KSIZE), k, k0)
    return k0


@triton.jit
def _conv_rows(m, JD, JH, JW):
    """GEMM row m as (jd, jh, jw, sample) over a JD x JH x JW grid of output positions."""
    jw = m % JW
    t = m // JW
    jh = t % JH
    t = t // JH
    return t % JD, jh, jw, t // JD


@triton.jit
def _conv_phase(g, sd, sh, sw):
    """Program axis 2 of a phased transposed conv as (group, phase per dimension)."""
    phase = g % (sd * sh * sw)
    return g // (sd * sh * sw), phase // (sw * sh), (phase // sw) % sh, phase % sw


@triton.jit
def _conv_phase_taps(r, pad, dil, stride, KSIZE, step):
    """(first tap, number of taps) that hit transposed output phase r in one dimension."""
    k0 = _conv_tap_start(r, pad, dil, stride, KSIZE)
    return k0, (KSIZE - k0 + step - 1) // step


@triton.jit
def _conv_tap(it, n_cb, kd0, kh0, kw0, nt_h, nt_w, step_d, step_h, step_w):
    """Step `it` of the (tap, channel block) loop as (kd, kh, kw, channel block)."""
    tap = it // n_cb
    kw = kw0 + (tap % nt_w) * step_w
    kh = kh0 + ((tap // nt_w) % nt_h) * step_h
    kd = kd0 + (tap // (nt_w * nt_h)) * step_d
    return kd, kh, kw, it - tap * n_cb


@triton.jit
def _conv_tap_offset(r, pad, k, dil, stride, TRANSPOSED: tl.constexpr):
    """Input offset of tap k from a row's base: transposed (phase r) (r + p - k*d) / s, exact
    (C's and numpy's // agree); forward k*d - p."""
    if TRANSPOSED:
        return (r + pad - k * dil) // stride
    else:
        return k * dil - pad


@triton.jit
def _conv_gemm_kernel(
    x_ptr, w_ptr, w2_ptr, b_ptr, y_ptr,
    C_in_g, D, H, W, C_out_g, OD, OH, OW, KD, KH, KW,
    sd, sh, sw, pd, ph, pw, dd, dh, dw,
    xs_n, xs_c, xs_d, xs_h, xs_w,
    ws_g, ws_co, ws_ci, ws_d, ws_h, ws_w,
    ys_n, ys_c, ys_d, ys_h, ys_w,
    M, K, JD, JH, JW, step_d, step_h, step_w,
    HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, TAP_OUTER: tl.constexpr,
    PHASED: tl.constexpr, PRECISION: tl.constexpr, IDX64: tl.constexpr, SPLIT_W: tl.constexpr,
    M_CONTIG: tl.constexpr, Y_CONTIG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    g = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < M
    n_ok = offs_n < C_out_g
    if PHASED:
        # Strided transposed conv, one output phase (o mod stride, per dimension) a program:
        # rows are o = phase + stride * j, and a kernel tap either hits every row of the
        # phase or none, so only the taps that hit are visited.
        g, ph_d, ph_h, ph_w = _conv_phase(g, sd, sh, sw)
        jd, jh, jw, nb = _conv_rows(offs_m, JD, JH, JW)
        ow = ph_w + sw * jw
        oh = ph_h + sh * jh
        od = ph_d + sd * jd
        m_ok = m_ok & (od < OD) & (oh < OH) & (ow < OW)
    else:
        ph_d = 0
        ph_h = 0
        ph_w = 0
        od, oh, ow, nb = _conv_rows(offs_m, OD, OH, OW)
    if IDX64:  # a tensor spans 2**31 elements or more (int32 offsets: fewer registers)
        nb = nb.to(tl.int64)
        g_c = g.to(tl.int64)
    else:
        g_c = g
    x_n = nb * xs_n + g_c * C_in_g * xs_c  # [BLOCK_M]
    w_col = g_c * ws_g + offs_n * ws_co  # [BLOCK_N]
    w_base = w_ptr + w_col
    w2_base = w2_ptr + w_col  # the weights' low parts (SPLIT_W)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if TAP_OUTER:
        # One flat, software-pipelined loop over (kernel tap, channel block): the tap's input
        # offset is a scalar added to a per-row base computed once, so the loop body is loads
        # (contiguous along the output row for NCHW), a few compares and the MMA.
        # input index per dimension: i = base + off(tap), valid when 0 <= i < size
        if TRANSPOSED:  # o = phase + s*j reads i = j + (phase + p - k*d) / s (exact)
            if PHASED:
                base_d = jd
                base_h = jh
                base_w = jw
            else:  # stride 1
                base_d = od
                base_h = oh
                base_w = ow
            kd0, nt_d = _conv_phase_taps(ph_d, pd, dd, sd, KD, step_d)
            kh0, nt_h = _conv_phase_taps(ph_h, ph, dh, sh, KH, step_h)
            kw0, nt_w = _conv_phase_taps(ph_w, pw, dw, sw, KW, step_w)
        else:
            base_d = od * sd
            base_h = oh * sh
            base_w = ow * sw
            kd0 = 0
            kh0 = 0
            kw0 = 0
            nt_d = KD
            nt_h = KH
            nt_w = KW
        x_row = x_n + base_d * xs_d + base_h * xs_h + base_w * xs_w  # [BLOCK_M]
        n_cb = tl.cdiv(C_in_g, BLOCK_K)
        n_iter = nt_d * nt_h * nt_w * n_cb
        for it in range(0, n_iter):
            kd, kh, kw, cb = _conv_tap(it, n_cb, kd0, kh0, kw0, nt_h, nt_w, step_d, step_h, step_w)
            c0 = cb * BLOCK_K
            off_d = _conv_tap_offset(ph_d, pd, kd, dd, sd, TRANSPOSED)
            off_h = _conv_tap_offset(ph_h, ph, kh, dh, sh, TRANSPOSED)
            off_w = _conv_tap_offset(ph_w, pw, kw, dw, sw, TRANSPOSED)
            i_d = base_d + off_d
            i_h = base_h + off_h
            i_w = base_w + off_w
            row_ok = m_ok & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H) & (i_w >= 0)
            row_ok = row_ok & (i_w < W)
            x_tap = x_row + (off_d * xs_d + off_h * xs_h + off_w * xs_w)
            if M_CONTIG:
                # NCHW-like input: neighbouring rows (output positions) are neighbouring
                # addresses (within an output row), channels are H*W apart. Without the hint
                # Triton lays the [BLOCK_M, BLOCK_K] load out channel-fastest: a warp's 32
                # lanes hit 32 cache lines. No alignment is claimed, so accesses stay 4 bytes
                # wide and the hint is safe where a row block spans two output rows.
                x_tap = tl.max_contiguous(x_tap, BLOCK_M)
            ci = c0 + tl.arange(0, BLOCK_K)
            c_ok = ci < C_in_g
            a = tl.load(
                x_ptr + x_tap[:, None] + ci[None, :] * xs_c,
                mask=row_ok[:, None] & c_ok[None, :],
                other=0.0,
            )
            w_off = kd * ws_d + kh * ws_h + kw * ws_w + ci[:, None] * ws_ci
            b_ok = c_ok[:, None] & n_ok[None, :]
            b = tl.load(w_base[None, :] + w_off, mask=b_ok, other=0.0)
            b_lo = b
            if SPLIT_W:
                b_lo = tl.load(w2_base[None, :] + w_off, mask=b_ok, other=0.0)
            acc = _conv_dot(a, b, b_lo, acc, PRECISION, SPLIT_W)
    else:
        # Few input channels (an RGB stem): (channel, tap) pairs are one flat reduction axis.
        taps = KD * KH * KW
        if not TRANSPOSED:  # separable: input offset = row base + column offset; masks per dim
            base_d = od * sd - pd
            base_h = oh * sh - ph
            base_w = ow * sw - pw
            x_row = x_n + base_d * xs_d + base_h * xs_h + base_w * xs_w
        for k0 in range(0, K, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            k_ok = kk < K
            ci = kk // taps
            r = kk % taps
            kd = r // (KH * KW)
            kh = (r // KW) % KH
            kw = r % KW
            if TRANSPOSED:
                i_d, ok_d = _conv_in_pos(od[:, None], kd[None, :], sd, pd, dd, D, True)
                i_h, ok_h = _conv_in_pos(oh[:, None], kh[None, :], sh, ph, dh, H, True)
                i_w, ok_w = _conv_in_pos(ow[:, None], kw[None, :], sw, pw, dw, W, True)
                x_off = x_n[:, None] + ci[None, :] * xs_c + i_d * xs_d + i_h * xs_h + i_w * xs_w
                a_ok = m_ok[:, None] & k_ok[None, :] & ok_d & ok_h & ok_w
            else:
                x_col = ci * xs_c + kd * dd * xs_d + kh * dh * xs_h + kw * dw * xs_w
                if M_CONTIG:  # as in the tap loop
                    x_row = tl.max_contiguous(x_row, BLOCK_M)
                x_off = x_row[:, None] + x_col[None, :]
                i_d = base_d[:, None] + (kd * dd)[None, :]
                i_h = base_h[:, None] + (kh * dh)[None, :]
                i_w = base_w[:, None] + (kw * dw)[None, :]
                a_ok = m_ok[:, None] & k_ok[None, :] & (i_d >= 0) & (i_d < D) & (i_h >= 0)
                a_ok = a_ok & (i_h < H) & (i_w >= 0) & (i_w < W)
            a = tl.load(x_ptr + x_off, mask=a_ok, other=0.0)
            w_k = (ci * ws_ci + kd * ws_d + kh * ws_h + kw * ws_w)[:, None]
            b_ok = k_ok[:, None] & n_ok[None, :]
            b = tl.load(w_base[None, :] + w_k, mask=b_ok, other=0.0)
            b_lo = b
            if SPLIT_W:
                b_lo = tl.load(w2_base[None, :] + w_k, mask=b_ok, other=0.0)
            acc = _conv_dot(a, b, b_lo, acc, PRECISION, SPLIT_W)
    if HAS_BIAS:
        bias = tl.load(b_ptr + g * C_out_g + offs_n, mask=n_ok, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    y_row = nb * ys_n + od * ys_d + oh * ys_h + ow * ys_w
    if Y_CONTIG:
        # NCHW output: stored output-position-fastest (as the input tile is loaded), not a
        # warp's 32 lanes on 32 channel planes; alignment is not claimed (see M_CONTIG)
        y_row = tl.max_contiguous(y_row, BLOCK_M)
    y_col = (g_c * C_out_g + offs_n) * ys_c
    tl.store(
        y_ptr + y_row[:, None] + y_col[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=m_ok[:, None] & n_ok[None, :],
    )


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


def _gemm_configs() -> list:
    """A few tile shapes for the GPU autotuner: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).
    Compiled for sm_90 with tf32x3 (ptxas -v) on KernelBench's conv classes (1D, transposed
    2D/3D, phased, 3-channel 3D, pointwise): 128x64x32 at 8 warps 128-254 registers, no spills;
    128x128x16 at 8 warps spills on the 3-channel stem (136 bytes) and transposed 3D (416), not
    on the others; 256x64x32 (132-656 bytes) and 128x64x32 at 4 warps (136-828) spilled
    everywhere, so they are not here. Not timed yet (benchmarks/gpu_conv_tune.sh)."""
    shapes = [(128, 64, 32, 8, 3), (128, 128, 16, 8, 4), (64, 128, 32, 8, 3), (128, 32, 32, 8, 3)]
    shapes += [(128, 64, 16, 8, 4), (64, 64, 32, 4, 3), (128, 16, 32, 8, 3), (64, 16, 32, 4, 3)]
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
        for m, n, k, w, s in shapes
    ]


def _prune_gemm_configs(configs, named_args, **kwargs):
    """Drop tiles more than twice as wide as a group's output channels (mostly masked work)."""
    width = max(16, triton.next_power_of_2(named_args["C_out_g"]))
    kept = [c for c in configs if c.kwargs["BLOCK_N"] <= 2 * width]
    return kept or configs[:1]


_conv_gemm_kernel_tuned = triton.autotune(
    configs=_gemm_configs(),
    key=["M", "K", "C_in_g", "C_out_g", "KD", "KH", "KW", "sd", "sh", "sw"],
    prune_configs_by={"early_config_prune": _prune_gemm_configs},
)(_conv_gemm_kernel)


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


@triton.jit
def _conv_plane(n_blocks, C_out, C_out_g, IDX64: tl.constexpr):
    """The direct kernels' program: (block within its output plane, sample, output channel,
    group), from one 1-D grid of n_blocks programs a plane (N * C_out planes can exceed 65535,
    axis 1's limit)."""
    pid = tl.program_id(0)
    pid_nc = pid // n_blocks
    nb = pid_nc // C_out
    co = pid_nc % C_out
    g = co // C_out_g
    if IDX64:
        nb = nb.to(tl.int64)
        co = co.to(tl.int64)
        g = g.to(tl.int64)
    return pid % n_blocks, nb, co, g


@triton.jit
def _conv_direct_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    C_in_g, D, H, W, C_out, C_out_g, OD, OH, OW, KD, KH, KW,
    sd, sh, sw, pd, ph, pw, dd, dh, dw,
    xs_n, xs_c, xs_d, xs_h, xs_w,
    ws_g, ws_co, ws_ci, ws_d, ws_h, ws_w,
    ys_n, ys_c, ys_d, ys_h, ys_w,
    S, n_blocks,
    HAS_BIAS: tl.constexpr, TRANSPOSED: tl.constexpr, BLOCK: tl.constexpr, IDX64: tl.constexpr,
):  # fmt: skip
    pid_s, nb, co, g = _conv_plane(n_blocks, C_out, C_out_g, IDX64)
    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    s_ok = offs < S
    ow = offs % OW
    t = offs // OW
    oh = t % OH
    od = t // OH
    # Tap by tap: each tap's input row is one contiguous (stride 1) or evenly strided load of
    # BLOCK elements and a scalar weight (a [BLOCK, taps] gather wasted the lanes of the
    # power-of-two padding: 7 of 16 for 3x3).
    x_base = x_ptr + nb * xs_n + g * C_in_g * xs_c
    w_base = w_ptr + g * ws_g + (co % C_out_g) * ws_co
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for tap in range(0, KD * KH * KW):
        kd = tap // (KH * KW)
        kh = (tap // KW) % KH
        kw = tap % KW
        i_d, ok_d = _conv_in_pos(od, kd, sd, pd, dd, D, TRANSPOSED)
        i_h, ok_h = _conv_in_pos(oh, kh, sh, ph, dh, H, TRANSPOSED)
        i_w, ok_w = _conv_in_pos(ow, kw, sw, pw, dw, W, TRANSPOSED)
        ok = s_ok & ok_d & ok_h & ok_w
        x_pos = x_base + i_d * xs_d + i_h * xs_h + i_w * xs_w
        w_tap = w_base + kd * ws_d + kh * ws_h + kw * ws_w
        for ci in range(0, C_in_g):
            xv = tl.load(x_pos + ci * xs_c, mask=ok, other=0.0)
            acc += xv.to(tl.float32) * tl.load(w_tap + ci * ws_ci).to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co).to(tl.float32)
    y = y_ptr + nb * ys_n + co * ys_c + od * ys_d + oh * ys_h + ow * ys_w
    tl.store(y, acc.to(y_ptr.dtype.element_ty), mask=s_ok)


@triton.jit
def _conv_direct2d_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
    C_in_g, H, W, C_out, C_out_g, OH, OW,
    sh, sw, ph, pw, dh, dw,
    xs_n, xs_c, xs_h, xs_w,
    ws_g, ws_co, ws_ci, ws_h, ws_w,
    ys_n, ys_c, ys_h, ys_w,
    n_tw, n_tiles,
    KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr, IDX64: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):  # fmt: skip
    """The direct kernel for 1D/2D forward convolutions (`DIRECT_2D=True`): a [BLOCK_H, BLOCK_W]
    tile of one output plane a program, its rows and columns as vectors (no division a
    position), the taps unrolled (KH, KW constexpr: each tap's address is the tile's plus a
    constant), each tap one masked [BLOCK_H, BLOCK_W] load and a scalar weight."""
    pid_t, nb, co, g = _conv_plane(n_tiles, C_out, C_out_g, IDX64)
    oh = (pid_t // n_tw) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (pid_t % n_tw) * BLOCK_W + tl.arange(0, BLOCK_W)
    oh_ok = oh < OH
    ow_ok = ow < OW
    x_base = x_ptr + nb * xs_n + g * C_in_g * xs_c
    w_base = w_ptr + g * ws_g + (co % C_out_g) * ws_co
    acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
    for ci in range(0, C_in_g):
        for kh in tl.static_range(KH):
            ih = oh * sh - ph + kh * dh
            h_ok = oh_ok & (ih >= 0) & (ih < H)
            row = x_base + ci * xs_c + ih * xs_h
            for kw in tl.static_range(KW):
                iw = ow * sw - pw + kw * dw
                w_ok = ow_ok & (iw >= 0) & (iw < W)
                xv = tl.load(
                    row[:, None] + (iw * xs_w)[None, :],
                    mask=h_ok[:, None] & w_ok[None, :],
                    other=0.0,
                )
                wv = tl.load(w_base + ci * ws_ci + kh * ws_h + kw * ws_w)
                acc += xv.to(tl.float32) * wv.to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co).to(tl.float32)
    y = y_ptr + nb * ys_n + co * ys_c + (oh * ys_h)[:, None] + (ow * ys_w)[None, :]
    tl.store(y, acc.to(y_ptr.dtype.element_ty), mask=oh_ok[:, None] & ow_ok[None, :])


@triton.jit
def _conv_1x1_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, C_in, C_out, S,
    xs_n, xs_c, ws_co, ws_ci, ys_n, ys_c,
    HAS_BIAS: tl.constexpr, PRECISION: tl.constexpr, IDX64: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """A 1x1 convolution of a contiguous (N, C, spatial...) input as one GEMM a batch sample
    (`AS_GEMM=True`): y[n] (C_out x S) = w (C_out x C_in) @ x[n] (C_in x S), output channels
    along M and positions along N, so the input's and the output's tiles are contiguous rows of
    positions (16-byte loads and stores); the implicit GEMM puts positions along M instead, and
    an NCHW output's channels are S apart."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    nb = tl.program_id(2)
    if IDX64:
        nb = nb.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_s = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = offs_m < C_out
    s_ok = offs_s < S
    x_base = x_ptr + nb * xs_n
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, C_in, BLOCK_K):
        ck = k0 + tl.arange(0, BLOCK_K)
        k_ok = ck < C_in
        a = tl.load(
            w_ptr + offs_m[:, None] * ws_co + ck[None, :] * ws_ci,
            mask=m_ok[:, None] & k_ok[None, :],
            other=0.0,
        )
        b = tl.load(
            x_base + ck[:, None] * xs_c + offs_s[None, :],
            mask=k_ok[:, None] & s_ok[None, :],
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_m, mask=m_ok, other=0.0).to(tl.float32)[:, None]
    y = y_ptr + nb * ys_n + offs_m[:, None] * ys_c + offs_s[None, :]
    tl.store(y, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & s_ok[None, :])


def _conv_1x1_configs() -> list:
    """Tiles for `_conv_1x1_kernel` (BLOCK_M output channels, BLOCK_N positions)."""
    shapes = [(128, 128, 32, 8, 3), (64, 256, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 4)]
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=st)
        for m, n, k, w, st in shapes
    ]


_conv_1x1_kernel_tuned = triton.autotune(configs=_conv_1x1_configs(), key=["C_in", "C_out", "S"])(
    _conv_1x1_kernel
)


def _conv_triple(value, nd: int, fill: int) -> list:
    """A conv parameter (int or sequence of nd) as (D, H, W), `fill` for the missing dims."""
    values = [value] * nd if isinstance(value, int) else list(value)
    if len(values) == 1 and nd > 1:
        values = values * nd
    if len(values) != nd:
        raise ValueError(f"expected {nd} values, got {value!r}")
    return [fill] * (3 - nd) + [int(v) for v in values]


def _conv_span(t) -> int:
    """Elements from a tensor's first to its last (its largest offset + 1)."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))


def _conv_is_channels_last(t) -> bool:
    if t.dim() == 4:
        return not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)
    if t.dim() == 5:
        return not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last_3d)
    return False


def triton_convolution(
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    transposed=False,
    output_padding=0,
    groups=1,
    *,
    precision=None,
    BLOCK_M=None,
    BLOCK_N=None,
    BLOCK_K=None,
    num_warps=None,
    num_stages=None,
    SPLIT_W=None,
    PACK_W=None,
    X_LAST=None,
    X_SPLIT=None,
    EPILOGUE=None,
    DIRECT_2D=None,
    AS_GEMM=None,
    PART_SUM=None,
):
    """`torch.convolution` in Triton: 1D/2D/3D, forward or transposed, any strides.

    The keywords are the tuner's knobs (tools.compile.tune.conv_variants); left at None, fp32 products
    use tl.dot's "tf32x3" and the GPU autotunes the tile. `precision`: the tl.dot input
    precision of fp32 inputs, one of `CONV_PRECISIONS` (other dtypes multiply natively).
    `BLOCK_M/N/K`, `num_warps`, `num_stages`: one fixed tile for the implicit GEMM (the direct
    kernel reads BLOCK_M as its block of output positions and num_warps). `X_LAST`: an input
    that is not channels-last is first copied channels-last by a Triton kernel, where the
    channel-by-channel loop runs (16 input channels a group or more), so the GEMM reads its
    input tile channel-fastest: 16-byte loads where the channels are a multiple of 4, against
    4-byte gathers along an NCHW row (sm_90 PTX of a 64-channel 3x3 conv: 12 16-byte
    `cp.async` a thread and step against 48 4-byte ones). Costs a copy of the input.
    `X_SPLIT` (with `precision="bf16x3"`, fp32 input and weights, 4 output channels a group
    or more): the input and the weights are first split into bf16 high and low parts in
    memory, the input channels-last and zero-padded (`_conv_split_input_kernel`; channels to a
    multiple of 16), and the GEMM multiplies those (`_conv_split_kernel`), tap by tap:
    unmasked 16-byte loads of half the bytes, no gathers or splitting in the loop. Costs two
    bf16 copies of the input (its bytes once; a 3-channel input's padded to 16 channels, and
    16/3 the products, where the flat (channel, tap) loop gathers every element). With
    `precision="ieee"` the same layout in fp32 without the split, one fp32 (FMA) product a step:
    exact fp32 products for small reductions (3 channels, 27 taps) where bf16x3 fails the
    draft-time accuracy gate.
    `PART_SUM` (X_SPLIT bf16x3 only): each step's three products summed from zero, then added to
    the running sum in fp32 (`_conv_split_kernel`), for long reductions.
    `EPILOGUE` (X_SPLIT only): `(kernel, tuned kernel, args, constexprs)`, a copy of the split
    GEMM with a pointwise epilogue in its store (tools/draft/conv_epilogue.py writes them into a
    draft), launched with the epilogue's arguments after the GEMM's.
    `DIRECT_2D` (forward 1D/2D convolutions with fewer than `DIRECT_MAX_COUT_G` output channels a
    group: depthwise): the direct kernel on 2D tiles of the output plane with its taps unrolled
    (`_conv_direct2d_kernel`) instead of flat blocks of positions.
    `AS_GEMM` (1x1, stride 1, no padding, one group, a contiguous input): one GEMM a batch
    sample with the positions along N (`_conv_1x1_kernel`), output rows stored contiguously."""
    x = input
    g = _conv_geometry(x, weight, stride, padding, dilation, transposed, output_padding, groups)
    # The output's layout follows torch's conv backends: channels-last if the input or the
    # weight is (Inductor's kernels after the conv index the buffer with those strides).
    memory_format = torch.contiguous_format
    if _conv_is_channels_last(x) or _conv_is_channels_last(weight):
        memory_format = torch.channels_last if g["nd"] == 2 else torch.channels_last_3d
    y = torch.empty(g["shape"], dtype=x.dtype, device=x.device, memory_format=memory_format)
    if y.numel() == 0:
        return y
    xs, ws, ys = _conv_strides(x, weight, y, g, transposed)
    # int64 offsets only where a tensor spans 2**31 elements or more
    idx64 = max(_conv_span(x), _conv_span(weight), _conv_span(y)) >= 2**31
    tile = (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    unit = tuple(g["stride"]) + tuple(g["padding"]) == (1, 1, 1, 0, 0, 0)
    if (
        AS_GEMM
        and not transposed
        and groups == 1
        and g["k"] == (1, 1, 1)
        and unit
        and x.is_contiguous()
        and y.is_contiguous()
    ):
        _conv_1x1_launch(x, weight, bias, y, xs, ws, ys, g, idx64, precision, tile)
        return y
    if g["C_out_g"] < DIRECT_MAX_COUT_G and DIRECT_2D and g["nd"] <= 2 and not transposed:
        _conv_direct2d_launch(x, weight, bias, y, xs, ws, ys, g, idx64, num_warps)
        return y
    if g["C_out_g"] < DIRECT_MAX_COUT_G:
        _conv_direct_launch(x, weight, bias, y, xs, ws, ys, g, idx64, transposed, tile)
        return y
    knobs = (SPLIT_W, PACK_W, X_LAST, X_SPLIT, EPILOGUE, PART_SUM)
    _conv_gemm_launch(x, xs, weight, ws, bias, y, ys, g, idx64, transposed, precision, tile, knobs)
    return y


def _conv_geometry(x, weight, stride, padding, dilation, transposed, output_padding, groups):
    """A convolution's sizes as (D, H, W)-style triples (1D/2D padded with unit dimensions):
    `nd`, `N`, `C_in`, `C_in_g`, `C_out_g`, `C_out`, `groups`, `size` (input), `k` (kernel),
    `out` (output), `stride`, `padding`, `dilation`, and the output's `shape`."""
    nd = x.dim() - 2
    if nd not in (1, 2, 3) or weight.dim() != x.dim():
        raise ValueError(f"convolution of a {x.dim()}-D input with a {weight.dim()}-D weight")
    sd, sh, sw = _conv_triple(stride, nd, 1)
    pd, ph, pw = _conv_triple(padding, nd, 0)
    dd, dh, dw = _conv_triple(dilation, nd, 1)
    opd, oph, opw = _conv_triple(output_padding, nd, 0)
    N, C_in = x.shape[0], x.shape[1]
    D, H, W = [1] * (3 - nd) + list(x.shape[2:])
    KD, KH, KW = [1] * (3 - nd) + list(weight.shape[2:])
    C_in_g = C_in // groups
    if transposed:
        C_out_g = weight.shape[1]
        out = [
            (i - 1) * s - 2 * p + d * (k - 1) + op + 1
            for i, s, p, d, k, op in zip(
                (D, H, W), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw), (KD, KH, KW), (opd, oph, opw)
            )
        ]
    else:
        C_out_g = weight.shape[0] // groups
        out = [
            (i + 2 * p - d * (k - 1) - 1) // s + 1
            for i, s, p, d, k in zip(
                (D, H, W), (sd, sh, sw), (pd, ph, pw), (dd, dh, dw), (KD, KH, KW)
            )
        ]
    C_out = C_out_g * groups
    return dict(
        nd=nd, N=N, C_in=C_in, C_in_g=C_in_g, C_out_g=C_out_g, C_out=C_out, groups=groups,
        size=(D, H, W), k=(KD, KH, KW), out=tuple(out), stride=(sd, sh, sw),
        padding=(pd, ph, pw), dilation=(dd, dh, dw), shape=[N, C_out] + out[3 - nd :],
    )  # fmt: skip


def _conv_strides(x, weight, y, g, transposed):
    """The input's, the weight's and the output's strides as the kernels take them: (n, c, d,
    h, w) for the input and the output, (group, output channel, input channel, d, h, w) for
    the weight; unit dimensions of 1D/2D convolutions have stride 0."""
    nd, C_in_g, C_out_g = g["nd"], g["C_in_g"], g["C_out_g"]

    def spatial_strides(t):
        return [0] * (3 - nd) + list(t.stride()[2:])

    xs = [x.stride(0), x.stride(1)] + spatial_strides(x)
    ys = [y.stride(0), y.stride(1)] + spatial_strides(y)
    wsp = spatial_strides(weight)
    if transposed:  # weight: (C_in, C_out / groups, k...)
        wsg, wco, wci = C_in_g * weight.stride(0), weight.stride(1), weight.stride(0)
    else:  # weight: (C_out, C_in / groups, k...)
        wsg, wco, wci = C_out_g * weight.stride(0), weight.stride(0), weight.stride(1)
    return xs, [wsg, wco, wci] + wsp, ys


def _conv_params(g):
    """Stride, padding and dilation as the kernels take them: (sd, sh, sw, pd, ph, pw, dd, dh,
    dw)."""
    return [*g["stride"], *g["padding"], *g["dilation"]]


def _conv_1x1_launch(x, weight, bias, y, xs, ws, ys, g, idx64, precision, tile):
    """`AS_GEMM`: a 1x1 convolution (stride 1, no padding, one group, contiguous) as one GEMM a
    batch sample with the positions along N (`_conv_1x1_kernel`)."""
    BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages = tile
    N, C_in, C_out = g["N"], g["C_in"], g["C_out"]
    OD, OH, OW = g["out"]
    interpret = os.environ.get("TRITON_INTERPRET", "0") == "1"
    has_bias = bias is not None
    b = bias if has_bias else y
    S = OD * OH * OW
    prec = "ieee" if x.dtype != torch.float32 or interpret else (precision or "tf32x3")
    if prec not in CONV_PRECISIONS:
        raise ValueError(f"precision {prec!r}: expected one of {CONV_PRECISIONS}")
    args = (x, weight, b, y, C_in, C_out, S, xs[0], xs[1], ws[1], ws[2], ys[0], ys[1])
    flags = dict(HAS_BIAS=has_bias, PRECISION=prec, IDX64=idx64)
    if interpret or BLOCK_M:
        bm, bn, bk = BLOCK_M or 32, BLOCK_N or 32, BLOCK_K or 16
        _conv_1x1_kernel[(triton.cdiv(S, bn), triton.cdiv(C_out, bm), N)](
            *args, **flags, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
            num_warps=num_warps or 4, num_stages=num_stages or 3,
        )  # fmt: skip
        return

    def grid(meta):
        return (triton.cdiv(S, meta["BLOCK_N"]), triton.cdiv(C_out, meta["BLOCK_M"]), N)

    _conv_1x1_kernel_tuned[grid](*args, **flags)


def _conv_direct2d_launch(x, weight, bias, y, xs, ws, ys, g, idx64, num_warps):
    """`DIRECT_2D`: a forward 1D/2D convolution with few output channels a group (depthwise)
    on 2D tiles of the output plane, its taps unrolled (`_conv_direct2d_kernel`)."""
    _, H, W = g["size"]
    _, KH, KW = g["k"]
    _, OH, OW = g["out"]
    _, sh, sw = g["stride"]
    _, ph, pw = g["padding"]
    _, dh, dw = g["dilation"]
    C_out = g["C_out"]
    has_bias = bias is not None
    b = bias if has_bias else y
    # tiles of the output plane: up to 128 wide, 1024 positions a program (4 warps)
    bw = max(16, min(128, triton.next_power_of_2(OW)))
    bh = max(1, min(1024 // bw, triton.next_power_of_2(OH)))
    n_tw = triton.cdiv(OW, bw)
    n_tiles = triton.cdiv(OH, bh) * n_tw
    _conv_direct2d_kernel[(n_tiles * g["N"] * C_out,)](
        x, weight, b, y, g["C_in_g"], H, W, C_out, g["C_out_g"], OH, OW, sh, sw, ph, pw, dh, dw,
        xs[0], xs[1], xs[3], xs[4], ws[0], ws[1], ws[2], ws[4], ws[5],
        ys[0], ys[1], ys[3], ys[4], n_tw, n_tiles,
        KH=KH, KW=KW, HAS_BIAS=has_bias, IDX64=idx64, BLOCK_H=bh, BLOCK_W=bw,
        num_warps=num_warps or 4,
    )  # fmt: skip


def _conv_direct_launch(x, weight, bias, y, xs, ws, ys, g, idx64, transposed, tile):
    """Few output channels a group (depthwise), forward or transposed: one output channel a
    program, tap by tap (`_conv_direct_kernel`)."""
    BLOCK_M, num_warps = tile[0], tile[3]
    OD, OH, OW = g["out"]
    KD, KH, KW = g["k"]
    C_out = g["C_out"]
    has_bias = bias is not None
    b = bias if has_bias else y
    sizes = [g["C_in_g"], *g["size"]]
    S = OD * OH * OW
    # 1024 positions a program at 4 warps: 8 a thread, contiguous along the output row.
    # The interpreter too: its cost is per program (a block of 64 made level1/75's reduced
    # copy, 24 channel planes of 850 positions, 336 programs and 85 s a call; 24 and 9 s).
    block = BLOCK_M or max(16, min(1024, triton.next_power_of_2(S)))
    n_blocks = triton.cdiv(S, block)
    _conv_direct_kernel[(n_blocks * g["N"] * C_out,)](
        x, weight, b, y, *sizes, C_out, g["C_out_g"], OD, OH, OW, KD, KH, KW, *_conv_params(g),
        *xs, *ws, *ys, S, n_blocks,
        HAS_BIAS=has_bias, TRANSPOSED=bool(transposed), BLOCK=block, IDX64=idx64,
        num_warps=num_warps or 4,
    )  # fmt: skip


def _conv_gemm_launch(x, xs, weight, ws, bias, y, ys, g, idx64, transposed, precision, tile,
                      knobs):  # fmt: skip
    """The implicit GEMM (`_conv_gemm_kernel`), or with `X_SPLIT` its split form
    (`_conv_split_launch`): the reduction's loop and phases, the input copied channels-last
    (`X_LAST`), the dot's precision, the weights repacked (`_conv_packed_weights`)."""
    SPLIT_W, PACK_W, X_LAST, X_SPLIT, EPILOGUE, PART_SUM = knobs
    N, C_in, C_in_g, C_out_g, groups = g["N"], g["C_in"], g["C_in_g"], g["C_out_g"], g["groups"]
    D, H, W = g["size"]
    KD, KH, KW = g["k"]
    OD, OH, OW = g["out"]
    sd, sh, sw = g["stride"]
    dd, dh, dw = g["dilation"]
    conv = _conv_params(g)
    tap_outer = C_in_g >= TAP_LOOP_MIN_CIN_G
    # strided transposed: one program per output phase, skipping the taps that miss it
    phased = bool(transposed) and tap_outer and sd * sh * sw > 1
    JD, JH, JW = (triton.cdiv(OD, sd), triton.cdiv(OH, sh), triton.cdiv(OW, sw))
    # taps that hit one output phase are stride / gcd(stride, dilation) apart
    steps = [s // math.gcd(s, d) if phased else 1 for s, d in ((sd, dd), (sh, dh), (sw, dw))]
    M = N * JD * JH * JW if phased else N * OD * OH * OW
    if (
        X_SPLIT
        and precision in ("bf16x3", "ieee")
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
    ):
        shapes = dict(groups=groups, C_in_g=C_in_g, C_out_g=C_out_g, out=(OD, OH, OW))
        _conv_split_launch(
            x, xs, weight, ws, bias, y, ys, shapes, conv, transposed, tile, EPILOGUE,
            exact=precision == "ieee", part_sum=bool(PART_SUM) and precision == "bf16x3",
        )  # fmt: skip
        return
    if EPILOGUE is not None:  # its kernel is a copy of the split GEMM: nothing else runs it
        raise ValueError(
            "EPILOGUE needs the X_SPLIT path: precision='bf16x3' or 'ieee', fp32 operands"
        )
    if X_LAST and tap_outer and xs[1] != 1:  # the input copied channels-last first
        S = D * H * W
        x_last = torch.empty((N, D, H, W, C_in), dtype=x.dtype, device=x.device)
        grid_t = (triton.cdiv(S, 64), triton.cdiv(C_in, 32), N)
        _conv_channels_last_kernel[grid_t](
            x, x_last, C_in, S, H, W, *xs, IDX64=idx64, BLOCK_C=32, BLOCK_S=64, num_warps=4
        )
        x = x_last
        xs = [S * C_in, 1, H * W * C_in, W * C_in, C_in]
    precision = _conv_gemm_precision(x, precision)
    w_hi, w_lo, ws, split_w = _conv_packed_weights(weight, ws, g, precision, SPLIT_W, PACK_W)
    b = bias if bias is not None else y
    args = [x, w_hi, w_lo, b, y, C_in_g, D, H, W, C_out_g, OD, OH, OW, KD, KH, KW, *conv]
    args += [*xs, *ws, *ys, M, C_in_g * KD * KH * KW, JD, JH, JW, *steps]
    # Hint that the input tile's rows are contiguous (W-contiguous input, not channels-last).
    # Triton then vectorises only as far as the offsets' provable alignment, which never spans
    # two output rows; within one, consecutive rows must read consecutive inputs: W-stride 1 or
    # a transposed gather (i = j + offset). Not for strided convs: their reads are strided, and
    # the pipeliner's first steps (tap 0, a constant) can make the offsets provably aligned.
    m_contig = xs[4] == 1 and xs[1] != 1
    m_contig = m_contig and (sw == 1 or (tap_outer and bool(transposed)))
    flags = dict(
        HAS_BIAS=bias is not None,
        TRANSPOSED=bool(transposed),
        TAP_OUTER=tap_outer,
        PHASED=phased,
        PRECISION=precision,
        IDX64=idx64,
        SPLIT_W=split_w,
        M_CONTIG=m_contig,
        # the output's rows are consecutive addresses within an output row (phased: s apart)
        Y_CONTIG=ys[4] == 1 and ys[1] != 1 and not phased,
    )
    _conv_gemm_run(args, flags, M, C_out_g, groups * (sd * sh * sw if phased else 1), tile)


def _conv_gemm_precision(x, precision):
    """The GEMM's tl.dot input precision: fp16/bf16 their native dot ("ieee"), fp32 "tf32x3"
    unless asked otherwise; the interpreter has no bf16x3 (its dot is exact: "ieee")."""
    if x.dtype != torch.float32:
        precision = "ieee"  # fp16/bf16: their native dot
    elif precision is None:
        precision = "tf32x3"
    elif precision not in CONV_PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {CONV_PRECISIONS}")
    if os.environ.get("TRITON_INTERPRET", "0") == "1" and precision == "bf16x3":
        precision = "ieee"
    return precision


def _conv_packed_weights(weight, ws, g, precision, SPLIT_W, PACK_W):
    """The weights repacked output-channel-fastest (`_conv_pack_kernel`; unless `PACK_W` is
    False), and with `SPLIT_W` (tf32x3, fp32 weights) split into TF32 high and low parts.
    Returns (high part, low part, the weight strides the GEMM reads, whether split)."""
    C_in_g, C_out_g = g["C_in_g"], g["C_out_g"]
    KD, KH, KW = g["k"]
    w_hi = w_lo = weight
    split_w = bool(SPLIT_W) and precision == "tf32x3" and weight.dtype == torch.float32
    if split_w or PACK_W is None or PACK_W:  # weights repacked output-channel-fastest
        taps = KD * KH * KW
        n = weight.numel()
        w_hi = torch.empty(n, dtype=weight.dtype, device=weight.device)
        w_lo = torch.empty(n, dtype=weight.dtype, device=weight.device) if split_w else w_hi
        _conv_pack_kernel[(triton.cdiv(n, 1024),)](
            weight, w_hi, w_lo, n, C_in_g, C_out_g, KH, KW, taps, *ws, SPLIT=split_w, BLOCK=1024
        )
        plane = C_in_g * C_out_g
        ws = [taps * plane, 1, C_out_g, KH * KW * plane, KW * plane, plane]
    return w_hi, w_lo, ws, split_w


def _conv_gemm_run(args, flags, M, C_out_g, programs_z, tile):
    """Launch the implicit GEMM: the tuner's tile, or in the interpreter one small tile, else
    autotuned on the GPU (`_conv_gemm_kernel_tuned`)."""
    BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages = tile
    interpret = os.environ.get("TRITON_INTERPRET", "0") == "1"
    fixed = tile != (None,) * 5
    if interpret or fixed:  # the tuner's tile, or in the interpreter one small tile
        if interpret and not fixed:
            bm, bn, bk = 32, 16 if C_out_g <= 16 else 32, 16
        else:
            bm, bn, bk = BLOCK_M or 128, BLOCK_N or 64, BLOCK_K or 32
        grid = (triton.cdiv(M, bm), triton.cdiv(C_out_g, bn), programs_z)
        _conv_gemm_kernel[grid](
            *args, **flags, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
            num_warps=num_warps or 8, num_stages=num_stages or 3,
        )  # fmt: skip
        return

    def grid(meta):
        m_blocks = triton.cdiv(M, meta["BLOCK_M"])
        return (m_blocks, triton.cdiv(C_out_g, meta["BLOCK_N"]), programs_z)

    _conv_gemm_kernel_tuned[grid](*args, **flags)


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
    x, xs, weight, ws, bias, y, ys, shapes, conv, transposed, tile, epilogue=None, exact=False,
    part_sum=False,
):  # fmt: skip
    """`triton_convolution`'s X_SPLIT path: split copies of the input and weights, then the
    split GEMM (see `_conv_split_kernel`). `exact`: fp32 copies in the same layout, no split,
    one fp32 (FMA) product a step. `part_sum`: the kernel's PART_SUM. The steps: the padded
    layout (`_conv_split_layout`), the input's copies (`_conv_split_input`), the weights'
    (`_conv_split_weights`), the GEMM (`_conv_split_gemm`)."""
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

CONV_FUNCTIONS = ("triton_convolution",)
"""The launcher a candidate calls; the tuner adds `CONV_PRECISIONS`/tile keywords to its calls."""

PRECISION_NOTE = (
    "convolution in Triton (tools.kernels.triton_conv: implicit GEMM, direct kernel for depthwise); "
    "fp32 products with tl.dot input_precision='tf32x3' (not plain TF32) unless the call's "
    "precision= says otherwise, fp32 accumulation; tile sizes autotuned on the GPU, fixed "
    "under the interpreter"
)


def candidate_source() -> str:
    """The self-contained source of the kernels and `triton_convolution`, for a candidate file."""
    with open(__file__) as f:
        text = f.read()
    begin = text.index("# --- candidate source begin")
    begin = text.index("\n", begin) + 1
    end = text.index("# --- candidate source end ---")
    return "# Convolutions in Triton (copied from triton-agent's tools/kernels/triton_conv.py).\n" + (
        text[begin:end].strip() + "\n"
    )
