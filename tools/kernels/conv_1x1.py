"""The 1x1 convolution as one GEMM a batch sample (`AS_GEMM`, `_conv_1x1_kernel`): output
channels along M, positions along N, so the input's and the output's tiles are contiguous rows
of positions.

Its code runs as a copy inside candidate files (a verification's or a draft's job), between the
`candidate source` markers; `tools.triton_conv.candidate_source` copies it with the others.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from tools.kernels.conv_common import CONV_PRECISIONS


# --- candidate source begin ---
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


# --- candidate source end ---
