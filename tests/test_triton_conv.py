"""tools/kernels/triton_conv.py: this project's Triton convolutions against torch.convolution.

The cases run in ONE subprocess (Triton reads TRITON_INTERPRET when `@triton.jit` runs, so it
is set before the kernels are defined), from the text `candidate_source()` returns, the text the
compiler drafter copies into candidates: what is tested is what candidates get. On CPU they run
under the interpreter (tl.dot is exact there); on a GPU natively, where fp32 products use
tl.dot's tf32x3 (the `gpu` variant). Tiny shapes: the matrix takes ~15 s on 2 cores.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# name -> (N, C_in, C_out, spatial, kernel, stride, padding, dilation, groups, transposed,
#          output_padding, bias, channels_last). Which kernel each reaches: C_out / groups < 4
# -> direct; else implicit GEMM, tap by tap when C_in / groups >= 16, one flat reduction below;
# transposed + strided + tap by tap -> one program per output phase ("phased"). An optional
# 14th item: keywords for triton_convolution (the tuner's tile and precision knobs).
CASES = {
    "1d_strided_dilated_bias": (2, 4, 17, (11,), (3,), 2, 1, 2, 1, False, 0, True, False),
    "2d_asym_kernel_3ch": (2, 3, 20, (7, 6), (3, 2), 1, 1, 1, 1, False, 0, True, False),
    "2d_strided_32ch_tap_loop": (1, 32, 18, (5, 6), (3, 3), 2, 1, 1, 1, False, 0, False, False),
    "2d_pointwise": (2, 16, 24, (3, 5), (1, 1), 1, 0, 1, 1, False, 0, False, False),
    "3d_asym_padding": (1, 4, 16, (4, 5, 3), (2, 3, 2), 1, (1, 0, 1), 1, 1, False, 0, True, False),
    "2d_grouped": (1, 8, 40, (4, 5), (3, 3), 1, 1, 1, 2, False, 0, True, False),
    "2d_depthwise": (2, 6, 6, (6, 7), (3, 3), 1, 1, 1, 6, False, 0, True, False),
    "2d_depthwise_multiplier_dilated": (1, 4, 8, (7, 6), (3, 3), 2, 2, 2, 4, False, 0, False, False),
    "2d_channels_last": (1, 5, 17, (5, 4), (3, 3), 1, 1, 1, 1, False, 0, True, True),
    "t1d_strided_dilated_outpad": (2, 5, 17, (6,), (3,), 3, 1, 2, 1, True, 2, False, False),
    "t2d_grouped_outpad": (1, 4, 6, (4, 5), (3, 3), 2, 1, 1, 2, True, 1, True, False),
    "t2d_16ch_dilated_tap_loop": (1, 16, 17, (3, 4), (3, 2), 1, (2, 1), 2, 1, True, 0, True, False),
    "t2d_16ch_strided_phased": (
        1, 16, 17, (3, 4), (3, 4), (2, 3), (1, 2), (1, 2), 1, True, (1, 0), True, False,
    ),
    "t2d_grouped_phased": (1, 32, 34, (3, 3), (3, 3), 2, 1, 1, 2, True, 1, False, False),
    "t3d_grouped_asym": (
        1, 4, 18, (3, 3, 2), (3, 2, 2), (2, 1, 2), (1, 0, 0), 1, 2, True, (1, 0, 1), True, False,
    ),
    # channels not a multiple of the channel block; the flat (tap, channel block) loop's tail
    "2d_24ch_dilated_tap_loop": (2, 24, 20, (6, 7), (3, 2), (1, 2), 1, (2, 1), 1, False, 0, True, False),
    # stride 4, dilation 2: taps that hit a phase are 2 apart and some phases have none
    "t2d_16ch_phased_gcd": (
        1, 16, 17, (3, 4), (5, 4), (4, 3), (1, 2), (2, 3), 1, True, (1, 2), False, False,
    ),
    # strided 1x1 with a row length divisible by 16: no contiguity hint (on a GPU, it would
    # vectorise a strided read); 1x1 with stride 1: the hint, and 16-byte loads
    "2d_pointwise_strided_ow32": (1, 16, 20, (4, 64), (1, 1), 2, 0, 1, 1, False, 0, True, False),
    "2d_pointwise_ow32": (1, 16, 20, (3, 32), (1, 1), 1, 0, 1, 1, False, 0, True, False),
    "3d_depthwise_strided": (1, 4, 4, (4, 5, 6), (3, 3, 3), 2, 1, 1, 4, False, 0, True, False),
    # the tuner's keywords (tools.compile.tune.conv_variants): a fixed tile and each input precision
    # (the interpreter's tl.dot is exact whatever the precision: this checks the plumbing)
    "2d_tile_16x16x16_bf16x3": (
        1, 16, 20, (5, 6), (3, 3), 1, 1, 1, 1, False, 0, True, False,
        {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "precision": "bf16x3"},
    ),
    "t2d_phased_tile_tf32": (
        1, 16, 18, (3, 4), (3, 3), 2, 1, 1, 1, True, 1, False, False,
        {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "num_stages": 2, "precision": "tf32"},
    ),
    # tf32x3 by hand on weights split in memory (SPLIT_W): tap loop, flat loop, phased
    "2d_split_w": (
        2, 16, 20, (5, 6), (3, 3), 1, 1, 1, 1, False, 0, True, False,
        {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "SPLIT_W": True},
    ),
    "3d_3ch_split_w": (
        1, 3, 17, (3, 4, 5), (2, 3, 3), 1, 1, 1, 1, False, 0, False, False, {"SPLIT_W": True},
    ),
    "t2d_phased_split_w_channels_last": (
        1, 16, 18, (3, 4), (3, 3), 2, 1, 1, 1, True, 1, True, True, {"SPLIT_W": True},
    ),
    # the weights as they are, not repacked (every other GEMM case repacks them: PACK_W default)
    "2d_grouped_unpacked_weights": (
        1, 32, 40, (4, 5), (3, 3), 1, 1, 1, 2, False, 0, True, True, {"PACK_W": False},
    ),
    "t3d_grouped_split_w": (
        1, 32, 34, (2, 3, 3), (2, 3, 3), 2, 1, 1, 2, True, 1, True, False, {"SPLIT_W": True},
    ),
    # the input copied channels-last first (X_LAST): tap loop 1D/2D/3D, grouped, phased
    # transposed, and an input already channels-last (no copy)
    "1d_x_last_strided": (2, 16, 20, (13,), (3,), 2, 1, 1, 1, False, 0, True, False, {"X_LAST": True}),
    "2d_x_last_24ch_dilated": (
        2, 24, 20, (6, 7), (3, 2), (1, 2), 1, (2, 1), 1, False, 0, True, False, {"X_LAST": True},
    ),
    "3d_x_last_grouped": (
        1, 32, 36, (3, 4, 5), (2, 3, 3), 1, 1, 1, 2, False, 0, True, False, {"X_LAST": True},
    ),
    "t2d_x_last_phased": (
        1, 16, 18, (3, 4), (3, 3), 2, 1, 1, 1, True, 1, True, False,
        {"X_LAST": True, "precision": "bf16x3"},
    ),
    "t3d_x_last_grouped_stride1": (
        1, 32, 34, (2, 3, 3), (2, 3, 3), 1, 1, 1, 2, True, 0, False, False, {"X_LAST": True},
    ),
    "2d_x_last_channels_last_input": (
        1, 16, 17, (5, 4), (3, 3), 1, 1, 1, 1, False, 0, True, True, {"X_LAST": True},
    ),
    # bf16x3 on operands split in memory, channels-last and zero-padded (X_SPLIT): forward
    # strided/dilated/grouped/channels-last, transposed stride 1 and phased (some phases with
    # no tap), channels padded to 16 or 32, a fixed tile and the interpreter's default one
    "2d_x_split_24ch_dilated": (
        2, 24, 20, (6, 7), (3, 2), (1, 2), 1, (2, 1), 1, False, 0, True, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    "2d_x_split_channels_last_tile": (
        1, 32, 40, (5, 4), (3, 3), 1, 1, 1, 1, False, 0, True, True,
        {"precision": "bf16x3", "X_SPLIT": True, "BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32},
    ),
    "3d_x_split_grouped": (
        1, 32, 36, (3, 4, 5), (2, 3, 3), 1, 1, 1, 2, False, 0, True, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    "t2d_x_split_phased_gcd": (
        1, 16, 17, (3, 4), (5, 4), (4, 3), (1, 2), (2, 3), 1, True, (1, 2), False, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    "t3d_x_split_grouped_phased": (
        1, 32, 34, (2, 3, 3), (2, 3, 3), 2, 1, 1, 2, True, 1, True, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    # fewer than 16 input channels a group, padded to 16 (the flat loop's case otherwise)
    "3d_x_split_3ch": (
        1, 3, 17, (3, 4, 5), (2, 3, 3), 1, 1, 1, 1, False, 0, True, False,
        {"precision": "bf16x3", "X_SPLIT": True}, 3,
    ),
    "t3d_x_split_3ch_strided": (
        2, 3, 16, (3, 3, 4), (3, 3, 3), 2, 1, 1, 1, True, (1, 0, 1), True, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    # few channels: the W-taps folded into the channels (FOLD, the 15th item: expected fold)
    "2d_x_split_3ch_fold_strided_dilated": (
        2, 3, 20, (9, 11), (3, 5), (2, 3), (1, 2), (1, 2), 1, False, 0, True, False,
        {"precision": "bf16x3", "X_SPLIT": True}, 5,
    ),
    "1d_x_split_4ch_fold_grouped": (
        2, 8, 12, (17,), (3,), 1, 1, 2, 2, False, 0, False, False,
        {"precision": "bf16x3", "X_SPLIT": True}, 3,
    ),
    # X_SPLIT's layout in fp32 without the split: one exact (ieee) product a step
    "t3d_x_split_3ch_exact": (
        2, 3, 16, (3, 3, 4), (3, 3, 3), 2, 1, 1, 1, True, (1, 0, 1), True, False,
        {"precision": "ieee", "X_SPLIT": True},
    ),
    "2d_x_split_3ch_fold_exact": (
        2, 3, 20, (9, 11), (3, 5), (2, 3), (1, 2), (1, 2), 1, False, 0, True, False,
        {"precision": "ieee", "X_SPLIT": True}, 5,
    ),
    # each step's three products summed apart, then added to the running sum (PART_SUM)
    "t3d_x_split_part_sum_grouped_phased": (
        1, 32, 34, (2, 3, 3), (2, 3, 3), 2, 1, 1, 2, True, 1, True, False,
        {"precision": "bf16x3", "X_SPLIT": True, "PART_SUM": True},
    ),
    "2d_x_split_8ch_grouped_strided": (
        1, 16, 12, (6, 7), (3, 3), 2, 1, 1, 2, False, 0, False, False,
        {"precision": "bf16x3", "X_SPLIT": True},
    ),
    # depthwise on 2D tiles with unrolled taps (DIRECT_2D): strided, dilated, padded, 1D,
    # a multiplier of 2 output channels a group, channels-last input
    "2d_depthwise_tiles": (
        2, 6, 6, (9, 37), (3, 3), 1, 1, 1, 6, False, 0, True, False, {"DIRECT_2D": True},
    ),
    "2d_depthwise_tiles_strided_dilated": (
        1, 4, 8, (20, 17), (3, 5), (2, 3), (1, 2), (2, 1), 4, False, 0, False, True,
        {"DIRECT_2D": True},
    ),
    "1d_depthwise_tiles": (
        2, 3, 3, (41,), (5,), 2, 2, 1, 3, False, 0, True, False, {"DIRECT_2D": True},
    ),
    # 1x1 as one GEMM a sample, positions along N (AS_GEMM); not where it does not apply
    "2d_1x1_as_gemm": (
        2, 24, 40, (5, 7), (1, 1), 1, 0, 1, 1, False, 0, True, False, {"AS_GEMM": True},
    ),
    "3d_1x1_as_gemm_no_bias": (
        1, 8, 20, (3, 4, 5), (1, 1, 1), 1, 0, 1, 1, False, 0, False, False, {"AS_GEMM": True},
    ),
    "2d_1x1_strided_not_as_gemm": (
        1, 16, 20, (6, 7), (1, 1), 2, 0, 1, 1, False, 0, True, False, {"AS_GEMM": True},
    ),
    "2d_depthwise_block_32": (
        1, 3, 3, (5, 9), (3, 3), 1, 1, 1, 3, False, 0, False, False, {"BLOCK_M": 32},
    ),
}  # fmt: skip

CHECK_SCRIPT = r"""
import json, sys
import torch

cases, device, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
from tools.kernels.triton_conv import candidate_source
scope = {"__name__": "conv_candidate"}
# from a file, as a draft is: a real GPU's @triton.jit reads its kernel's source lines back
# (inspect), which code compiled from a string does not have (the interpreter does not ask)
path = out + ".py"
open(path, "w").write(candidate_source())
exec(compile(open(path).read(), path, "exec"), scope)
conv = scope["triton_convolution"]


class Counted:  # counts launches (X_LAST's channels-last copy, X_SPLIT's split copy)
    def __init__(self, kernel):
        self.kernel, self.launches, self.args = kernel, 0, []

    def __getitem__(self, grid):
        self.launches += 1

        def launch(*args, **kwargs):
            self.args.append(args)
            return self.kernel[grid](*args, **kwargs)

        return launch


staging = scope["_conv_channels_last_kernel"] = Counted(scope["_conv_channels_last_kernel"])
splitting = scope["_conv_split_input_kernel"] = Counted(scope["_conv_split_input_kernel"])
tiling = scope["_conv_direct2d_kernel"] = Counted(scope["_conv_direct2d_kernel"])
pointwise = scope["_conv_1x1_kernel"] = Counted(scope["_conv_1x1_kernel"])
results = {}
for name, case in cases.items():
    n, cin, cout, sp, k, s, p, d, g, tr, op, bias, cl, *knobs = case
    nd = len(sp)
    tup = lambda v: tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd
    torch.manual_seed(0)
    x = torch.randn(n, cin, *sp, device=device)
    w = torch.randn(*((cin, cout // g) if tr else (cout, cin // g)), *k, device=device)
    b = torch.randn(cout, device=device) if bias else None
    if cl:
        x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    args = (tup(s), tup(p), tup(d), tr, tup(op), g)
    ref = torch.convolution(x.double(), w.double(), None if b is None else b.double(), *args)
    before, split_before = staging.launches, splitting.launches
    tiles_before, gemm_before = tiling.launches, pointwise.launches
    got = conv(x, w, b, *args, **(knobs[0] if knobs else {}))
    results[name] = {
        "shape": list(got.shape), "ref_shape": list(ref.shape),
        "stride": list(got.stride()), "ref_stride": list(torch.convolution(x, w, b, *args).stride()),
        "max_err": (got.double() - ref).abs().max().item() if got.shape == ref.shape else None,
        "scale": ref.abs().max().item(),
        "staged": staging.launches - before,
        "split": splitting.launches - split_before,
        "tiles": tiling.launches - tiles_before,
        "as_gemm": pointwise.launches - gemm_before,
        # the split copy's FOLD: W-taps folded into the channels (1: none)
        "fold": splitting.args[-1][21] if splitting.launches > split_before else None,
    }
json.dump(results, open(out, "w"))
"""


def _run_cases(device: str, workdir: Path) -> dict[str, dict]:
    out = workdir / f"conv_{device}.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONPATH=str(ROOT), TRITON_CACHE_DIR=str(workdir / "triton-cache"))
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", CHECK_SCRIPT, json.dumps(CASES), device, str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, f"conv cases failed:\n{proc.stderr[-4000:]}"
    return json.loads(out.read_text())


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def results(request, tmp_path_factory) -> dict[str, dict]:
    device = request.param
    if device == "cpu" and _has_cuda():
        # Triton 3.6's interpreter (the GPU machine's) cannot run kernels with loops.
        pytest.skip("the interpreter variant runs on machines without a GPU")
    return {"device": device, **_run_cases(device, tmp_path_factory.mktemp(f"conv-{device}"))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_convolution(results, name):
    r = results[name]
    assert r["shape"] == r["ref_shape"], f"{name}: shape {r['shape']}, torch {r['ref_shape']}"
    # fp32 tolerances of the verifier (atol = rtol = 1e-4), against an fp64 reference
    assert r["max_err"] <= 1e-4 + 1e-4 * r["scale"], f"{name}: max abs error {r['max_err']}"
    # Inductor's kernels after a conv index its output with the strides torch's conv gives
    assert r["stride"] == r["ref_stride"], f"{name}: strides {r['stride']}, torch {r['ref_stride']}"
    # X_LAST copies an input that is not channels-last, where the tap loop runs, and only there
    knobs = CASES[name][13] if len(CASES[name]) > 13 else {}
    copies = knobs.get("X_LAST") and not CASES[name][12] and CASES[name][1] // CASES[name][8] >= 16
    assert r["staged"] == (1 if copies else 0), f"{name}: {r['staged']} channels-last copies"
    # X_SPLIT (bf16x3, or ieee: the layout unsplit) copies the input once (every X_SPLIT case
    # here has a tl.dot)
    split = knobs.get("X_SPLIT") and knobs.get("precision") in ("bf16x3", "ieee")
    if split and knobs["precision"] == "ieee":  # exact products: fp32's error, not bf16x3's
        assert r["max_err"] <= 2e-6 * max(1.0, r["scale"]), f"{name}: {r['max_err']}"
    assert r["split"] == (1 if split else 0), f"{name}: {r['split']} split copies"
    # the 1x1 GEMM where AS_GEMM asks for it and it applies (stride 1)
    as_gemm = knobs.get("AS_GEMM") and "strided" not in name
    assert r["as_gemm"] == (1 if as_gemm else 0), f"{name}: {r['as_gemm']} 1x1 GEMMs"
    # the 2D-tiled direct kernel exactly where DIRECT_2D asks for it
    assert r["tiles"] == (1 if knobs.get("DIRECT_2D") else 0), f"{name}: {r['tiles']} tiled"
    if split:  # W-taps folded where a case says so (transposed, 16+ channels: never)
        fold = CASES[name][14] if len(CASES[name]) > 14 else 1
        assert r["fold"] == fold, f"{name}: fold {r['fold']}, expected {fold}"


def test_candidate_source_is_standalone():
    """What the drafter copies into a candidate imports nothing of this project."""
    from tools.kernels.triton_conv import candidate_source

    tree = ast.parse(candidate_source())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported <= {"math", "os", "torch", "triton"}, imported
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"triton_convolution", "_conv_gemm_kernel", "_conv_direct_kernel"} <= defined


def test_input_and_weight_of_different_dtypes_fail_with_torchs_message():
    """A half-precision input beside fp32 weights (a draft's model left at fp32) failed inside
    tl.dot with a CompilationError that named no cause (session 19's half-precision lane);
    torch says what is wrong, and so does this project's convolution now."""
    import torch

    from tools.kernels.triton_conv import triton_convolution

    x, w = torch.randn(1, 3, 8, 8, dtype=torch.float16), torch.randn(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Input type .* and weight type .* should be the same"):
        torch.nn.functional.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"Input type \(torch.float16\) and weight type"):
        triton_convolution(x, w)
