"""The direct convolutions, for groups of fewer than `DIRECT_MAX_COUT_G` output channels
(depthwise), where a tl.dot tile (at least 16 wide) would be mostly empty: one output channel
a program, tap by tap, contiguous loads and scalar weights (`_conv_direct_kernel`, forward or
transposed), or with `DIRECT_2D` 2D tiles of the output plane with the taps unrolled
(`_conv_direct2d_kernel`, forward 1D/2D).

Its code runs as a copy inside candidate files (a verification's or a draft's job), between the
`candidate source` markers; `tools.triton_conv.candidate_source` copies it with the others.
"""

from __future__ import annotations

import triton
import triton.language as tl

from tools.kernels.conv_common import _conv_in_pos, _conv_params


# --- candidate source begin ---
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


# --- candidate source end ---
