"""What the convolution kernel families (`triton_conv`'s) share: the tl.dot precisions, and the
index arithmetic of output rows, kernel taps and transposed output phases (`@triton.jit`
helpers) and of the launchers (a tensor's span, the stride/padding/dilation list).

Its code runs as a copy inside candidate files (a verification's or a draft's job), between the
`candidate source` markers; `tools.triton_conv.candidate_source` copies it with the families'.
"""

from __future__ import annotations

import triton
import triton.language as tl

# --- candidate source begin ---
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


def _conv_span(t) -> int:
    """Elements from a tensor's first to its last (its largest offset + 1)."""
    return 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))


def _conv_params(g):
    """Stride, padding and dilation as the kernels take them: (sd, sh, sw, pd, ph, pw, dd, dh,
    dw)."""
    return [*g["stride"], *g["padding"], *g["dilation"]]


# --- candidate source end ---
