"""This project's Triton convolutions, for candidates that must not call a library conv.

`triton_convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)` has `torch.convolution`'s signature and meaning for 1D/2D/3D inputs: forward and
transposed, stride, padding, dilation, output_padding, groups (depthwise included), bias, any
input/weight strides (channels-last too). Keyword-only knobs for the tuner (tools.compile.tune
`conv_variants`): `precision`, `BLOCK_M/N/K`, `num_warps`, `num_stages`, `SPLIT_W`, `PACK_W`,
`X_LAST`, `X_SPLIT`, `EPILOGUE`, `DIRECT_2D`, `AS_GEMM`, `PART_SUM`. This module is the
launcher: it sizes the convolution, makes the output and picks the kernel family, one file
each beside it:

- `conv_gemm.py`: the implicit GEMM (`_conv_gemm_kernel`), the default.
- `conv_split.py`: the implicit GEMM on operands split into bf16 parts in memory (`X_SPLIT`).
- `conv_direct.py`: one output channel a program, for groups of fewer than
  `DIRECT_MAX_COUT_G` output channels (depthwise), where a tl.dot tile would be mostly empty.
- `conv_1x1.py`: a 1x1 convolution as one GEMM a batch sample (`AS_GEMM`).
- `conv_common.py`: what they share (index arithmetic, `CONV_PRECISIONS`).

Precision: fp32 inputs multiply with `tl.dot(..., input_precision="tf32x3")` by default (three
TF32 products per fp32 product, error ~1e-6 relative; plain TF32 is ~1e-3 and fails fp32's atol
1e-4; issue 15 measured tf32x3 faster than and as accurate as cuBLAS's fp32 GEMM on the H200).
The tuner may try `CONV_PRECISIONS` (bf16x3, ieee, tf32): verification at the problem's
tolerance decides, and the report names the precision. fp16/bf16 inputs use their native dot.
Accumulation is fp32. The interpreter's tl.dot is exact (numpy) and has no bf16x3 (run as ieee).

The code between each file's `candidate source` markers is self-contained together (math, os,
torch, triton, tl): the compiler drafter (`tools/draft/`, `rewrite.convolutions_in_triton`)
copies it into a candidate file with `candidate_source()`, one namespace, so a candidate never
imports `tools/`; this module is imported in the agent's and the draft job's processes for
that source and its names. On a GPU the GEMM kernel is autotuned over a few tile configs unless
the call fixes one; under `TRITON_INTERPRET=1` it runs one small fixed config unless the call
gives one.
"""

from __future__ import annotations

import os

import torch

from tools.kernels.conv_1x1 import _conv_1x1_launch
from tools.kernels.conv_common import CONV_PRECISIONS, _conv_span
from tools.kernels.conv_direct import _conv_direct2d_launch, _conv_direct_launch
from tools.kernels.conv_gemm import TAP_LOOP_MIN_CIN_G, _conv_gemm_launch
from tools.kernels.conv_split import _conv_split_launch

__all__ = [
    "CONV_FUNCTIONS",
    "CONV_PRECISIONS",
    "DIRECT_MAX_COUT_G",
    "PRECISION_NOTE",
    "TAP_LOOP_MIN_CIN_G",
    "candidate_source",
    "source_files",
    "triton_convolution",
]


# --- candidate source begin ---
DIRECT_MAX_COUT_G = 4  # output channels a group below which the direct kernel is used


def _conv_triple(value, nd: int, fill: int) -> list:
    """A conv parameter (int or sequence of nd) as (D, H, W), `fill` for the missing dims."""
    values = [value] * nd if isinstance(value, int) else list(value)
    if len(values) == 1 and nd > 1:
        values = values * nd
    if len(values) != nd:
        raise ValueError(f"expected {nd} values, got {value!r}")
    return [fill] * (3 - nd) + [int(v) for v in values]


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

    The keywords are the tuner's knobs (tools.compile.tune.conv_variants); left at None, fp32
    products use tl.dot's "tf32x3" and the GPU autotunes the tile. `precision`: the tl.dot input
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
    sample with the positions along N (`_conv_1x1_kernel`), output rows stored contiguously.

    The steps: the sizes (`_conv_geometry`), the output in torch's layout (`_conv_output`), the
    kernel family that fits (`_conv_family`) and its launch (`_conv_launch`)."""
    x = input
    if x.dtype != weight.dtype:  # torch's own message: tl.dot's CompilationError hides it
        raise RuntimeError(
            f"Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same"
        )
    g = _conv_geometry(x, weight, stride, padding, dilation, transposed, output_padding, groups)
    y = _conv_output(x, weight, g)
    if y.numel() == 0:
        return y
    tile = (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    knobs = dict(
        SPLIT_W=SPLIT_W, PACK_W=PACK_W, X_LAST=X_LAST, X_SPLIT=X_SPLIT, EPILOGUE=EPILOGUE,
        DIRECT_2D=DIRECT_2D, AS_GEMM=AS_GEMM, PART_SUM=PART_SUM,
    )  # fmt: skip
    _conv_launch(x, weight, bias, y, g, transposed, precision, tile, knobs)
    return y


def _conv_output(x, weight, g):
    """The output, empty, in the layout torch's conv backends give it: channels-last if the
    input or the weight is (Inductor's kernels after the conv index the buffer with those
    strides), else contiguous."""
    memory_format = torch.contiguous_format
    if _conv_is_channels_last(x) or _conv_is_channels_last(weight):
        memory_format = torch.channels_last if g["nd"] == 2 else torch.channels_last_3d
    return torch.empty(g["shape"], dtype=x.dtype, device=x.device, memory_format=memory_format)


def _conv_family(x, weight, y, g, transposed, precision, knobs):
    """The kernel family that computes the convolution: "1x1" (`AS_GEMM`, where it applies: 1x1,
    stride 1, no padding, one group, contiguous), "direct2d" (`DIRECT_2D`, forward 1D/2D) or
    "direct" (fewer than `DIRECT_MAX_COUT_G` output channels a group), "split" (`X_SPLIT` with
    bf16x3 or ieee on fp32 operands), else "gemm" (the implicit GEMM)."""
    unit = tuple(g["stride"]) + tuple(g["padding"]) == (1, 1, 1, 0, 0, 0)
    if (
        knobs["AS_GEMM"]
        and not transposed
        and g["groups"] == 1
        and g["k"] == (1, 1, 1)
        and unit
        and x.is_contiguous()
        and y.is_contiguous()
    ):
        return "1x1"
    if g["C_out_g"] < DIRECT_MAX_COUT_G:
        return "direct2d" if knobs["DIRECT_2D"] and g["nd"] <= 2 and not transposed else "direct"
    if (
        knobs["X_SPLIT"]
        and precision in ("bf16x3", "ieee")
        and x.dtype == torch.float32
        and weight.dtype == torch.float32
    ):
        return "split"
    return "gemm"


def _conv_launch(x, weight, bias, y, g, transposed, precision, tile, knobs):
    """Launch the family `_conv_family` picks, on the tensors' strides as the kernels take them
    (`_conv_strides`), with int64 offsets only where a tensor spans 2**31 elements or more."""
    xs, ws, ys = _conv_strides(x, weight, y, g, transposed)
    idx64 = max(_conv_span(x), _conv_span(weight), _conv_span(y)) >= 2**31
    family = _conv_family(x, weight, y, g, transposed, precision, knobs)
    if family == "1x1":
        _conv_1x1_launch(x, weight, bias, y, xs, ws, ys, g, idx64, precision, tile)
    elif family == "direct2d":
        _conv_direct2d_launch(x, weight, bias, y, xs, ws, ys, g, idx64, tile[3])
    elif family == "direct":
        _conv_direct_launch(x, weight, bias, y, xs, ws, ys, g, idx64, transposed, tile)
    elif family == "split":
        _conv_split_launch(
            x, xs, weight, ws, bias, y, ys, g, transposed, tile, knobs["EPILOGUE"],
            exact=precision == "ieee",
            part_sum=bool(knobs["PART_SUM"]) and precision == "bf16x3",
        )  # fmt: skip
    elif knobs["EPILOGUE"] is not None:
        # its kernel is a copy of the split GEMM: nothing else runs it
        raise ValueError(
            "EPILOGUE needs the X_SPLIT path: precision='bf16x3' or 'ieee', fp32 operands"
        )
    else:
        gemm_knobs = (knobs["SPLIT_W"], knobs["PACK_W"], knobs["X_LAST"])
        _conv_gemm_launch(
            x, xs, weight, ws, bias, y, ys, g, idx64, transposed, precision, tile, gemm_knobs
        )


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


# --- candidate source end ---

CONV_FUNCTIONS = ("triton_convolution",)
"""The launcher a candidate calls; the tuner adds `CONV_PRECISIONS`/tile keywords to its calls."""

PRECISION_NOTE = (
    "convolution in Triton (tools.kernels.triton_conv: implicit GEMM, direct kernel for depthwise); "
    "fp32 products with tl.dot input_precision='tf32x3' (not plain TF32) unless the call's "
    "precision= says otherwise, fp32 accumulation; tile sizes autotuned on the GPU, fixed "
    "under the interpreter"
)

FAMILY_FILES = ("conv_common.py", "conv_gemm.py", "conv_split.py", "conv_direct.py", "conv_1x1.py")
"""The kernel families' files beside this one, in the order their sources are copied (what
they share first: module-level autotuner wrappers call the functions above them)."""

CANDIDATE_IMPORTS = (
    "import math\nimport os\n\nimport torch\nimport triton\nimport triton.language as tl\n"
)
"""The imports the copied source needs (each file's own stay out of the copy: the files import
each other, the copy is one namespace)."""


def source_files() -> list[str]:
    """The files `candidate_source` copies from: the kernel families', then this launcher's."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, name) for name in FAMILY_FILES] + [os.path.abspath(__file__)]


def candidate_source(precision: str = "fp32") -> str:
    """The self-contained source of the kernels and `triton_convolution`, for a candidate file:
    the imports, then each of `source_files()` between its `candidate source` markers. For a
    bf16/fp16 draft (`precision`), with `conv_gemm.HALF_EDITS` made and `HALF_SOURCE` after it
    (tiles for 2-byte operands; the input copied channels-last where that lets the loop be
    pipelined); fp32 drafts get the source as it is."""
    parts = []
    for path in source_files():
        with open(path) as f:
            text = f.read()
        begin = text.index("# --- candidate source begin")
        begin = text.index("\n", begin) + 1
        end = text.index("# --- candidate source end ---")
        parts.append(text[begin:end].strip() + "\n")
    text = (
        "# Convolutions in Triton (copied from triton-agent's tools/kernels/triton_conv.py and "
        "conv_*.py).\n" + CANDIDATE_IMPORTS + "\n\n" + "\n\n".join(parts)
    )
    if precision not in ("bf16", "fp16"):
        return text
    from tools.kernels.conv_gemm import HALF_EDITS, HALF_SOURCE

    for old, new in HALF_EDITS:
        if text.count(old) != 1:
            raise ValueError(f"the convolution source has {text.count(old)} of {old.strip()!r}")
        text = text.replace(old, new)
    return text + "\n\n" + HALF_SOURCE.strip() + "\n"
