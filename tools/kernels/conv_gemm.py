"""The implicit-GEMM convolution (`_conv_gemm_kernel`), `triton_convolution`'s default family.

Rows are output positions (n, od, oh, ow), columns the output channels of one group (program
axis 2), the reduction runs over (kernel tap, input channel) and is gathered from the input on
the fly. With at least `TAP_LOOP_MIN_CIN_G` input channels a group it is ONE flat,
software-pipelined loop over (tap, channel block): the tap (a scalar) is decoded from the loop
counter, the input index is a per-row base computed once plus a scalar offset, so the body is
two loads, a few compares and the MMA. With fewer channels (the 3-channel first layer) the
(channel, tap) pairs are one flat reduction axis, so a block is not mostly padding. Transposed
convolution is the same GEMM with a gather: output o takes input i = (o + p - k*d) / s where
that is a whole number in range; strided, one output phase (o mod s) a program, which visits
only the taps that hit it (they are s / gcd(s, d) apart). For NCHW tensors the input tile is
loaded and the output tile stored output-position-fastest (contiguity hints; Triton otherwise
laid both out channel-fastest, 32 cache lines a warp).

`_conv_pack_kernel` repacks the weights [group, tap, C_in, C_out], output channels contiguous
(coalesced weight tiles), and for `SPLIT_W` splits them into TF32 high and low parts;
`_conv_channels_last_kernel` copies an input channels-last first (`X_LAST`).

sm_90 (ptxas -v, tf32x3, 128x64x32 at 8 warps), before -> after this layout (flat loop, row-
fastest input loads and output stores, repacked weights): conv1d 235 -> 121 registers;
transposed 2D 250 -> 140; transposed 3D 255 + 20 bytes spilled -> 124, none; pointwise
170 -> 124; 3-channel 3D stem 255 + 48 bytes spilled -> 254, none. Not yet timed on a GPU.

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
    CONV_PRECISIONS,
    _conv_in_pos,
    _conv_params,
    _conv_phase,
    _conv_phase_taps,
    _conv_rows,
    _conv_tap,
    _conv_tap_offset,
)

# --- candidate source begin ---
TAP_LOOP_MIN_CIN_G = 16  # input channels a group from which the GEMM loops tap by tap


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


def _conv_gemm_launch(x, xs, weight, ws, bias, y, ys, g, idx64, transposed, precision, tile,
                      knobs):  # fmt: skip
    """The implicit GEMM (`_conv_gemm_kernel`): the reduction's loop and phases, the input
    copied channels-last (`X_LAST`), the dot's precision, the weights repacked
    (`_conv_packed_weights`). `knobs`: (SPLIT_W, PACK_W, X_LAST)."""
    SPLIT_W, PACK_W, X_LAST = knobs
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


# --- candidate source end ---


# bf16/fp16 drafts (`tools.kernels.triton_conv.candidate_source(precision)`): the candidate source
# above with `HALF_EDITS` made and `HALF_SOURCE` after it, so fp32 drafts keep theirs as it is.
# sm_90 PTX of the copied kernels on fp16 operands (the launches recorded under the interpreter,
# compiled with their specialisation): a 64->128-channel NCHW 3x3 conv at the autotuner's first
# tile moved its input tile with no cp.async (2-byte gathers are too narrow for it: only the
# weights were pipelined, 3 cp.async) and 9 cp.async with the input copied channels-last first.
HALF_EDITS = (
    (
        "    tap_outer = C_in_g >= TAP_LOOP_MIN_CIN_G\n",
        "    tap_outer = C_in_g >= TAP_LOOP_MIN_CIN_G\n"
        "    if X_LAST is None and x.dtype in (torch.float16, torch.bfloat16):\n"
        "        # 2-byte gathers along an NCHW row are too narrow for cp.async (the loop is then\n"
        "        # not pipelined); channels-last rows of 16 channels are 16-byte copies\n"
        "        X_LAST = C_in % 16 == 0 and C_in_g % 16 == 0\n",
    ),
    (
        "    _conv_gemm_kernel_tuned[grid](*args, **flags)\n",
        "    tuned = _conv_gemm_kernel_tuned\n"
        "    if args[0].dtype in (torch.float16, torch.bfloat16):  # 2-byte operands: their tiles\n"
        "        tuned = _conv_gemm_kernel_tuned_half\n"
        "    tuned[grid](*args, **flags)\n",
    ),
)
"""(text, replacement) pairs made in the candidate source of a bf16/fp16 draft (each text once)."""

HALF_SOURCE = """
def _half_gemm_configs() -> list:
    \"\"\"The implicit GEMM's tiles for 2-byte operands: K blocks of 64 (a stage holds twice the
    K of an fp32 one). sm_90 PTX on fp16 (ptxas -v; 2D 64->128 3x3 NCHW and channels-last, the
    3-channel 11x11 stride-4 stem, transposed 3D stride 2, 1D), all wgmma f16 with cp.async:
    no spills at these; spilled on transposed 3D: 128x128x64 at 8 warps (1080 bytes),
    64x128x64 at 4 (884), 128x128x32 at 8 and 4 stages (768); on the stem: 128x64x64 at 4
    warps (500), 128x256x64 (164). Not timed yet.\"\"\"
    shapes = [(128, 64, 64, 8, 3), (64, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 32, 64, 8, 3)]
    shapes += [(128, 64, 32, 8, 3), (128, 16, 64, 8, 3), (64, 16, 64, 4, 3)]
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
        for m, n, k, w, s in shapes
    ]


_conv_gemm_kernel_tuned_half = triton.autotune(
    configs=_half_gemm_configs(),
    key=["M", "K", "C_in_g", "C_out_g", "KD", "KH", "KW", "sd", "sh", "sw"],
    prune_configs_by={"early_config_prune": _prune_gemm_configs},
)(_conv_gemm_kernel)
"""
"""What a bf16/fp16 draft's candidate source has after the kernels: the autotuner for 2-byte
operands that `HALF_EDITS` launches."""
