"""Draft-time layout and precision choice for convolution calls (tools/draft/conv_picks.py).

Under the Triton interpreter with a scripted timer (do_bench needs a GPU): each call site is
found from its calling line, only the variants that apply to its shape are tried (X_LAST where
the channel loop runs on an NCHW input; bf16x3 where a tl.dot runs on fp32), bf16x3 only after
the accuracy check passes, the fastest over several rounds is written into that site's keywords
only when it beats the call as written by MIN_GAIN, the report's precision follows, and the
rewritten draft still computes the convolutions. The real accuracy check is exercised on the CPU
with outputs of fp32, TF32-like and bf16x3-like accuracy.
"""

from __future__ import annotations

import pytest

from tests.helpers import run_json_script
from tools.compile import tune
from tools.kernels.triton_conv import candidate_source

DRAFT = (
    "import torch\nimport torch.nn as nn\n\n"
    + candidate_source()
    + """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Conv2d(16, 20, 3, padding=1)
        self.stem = nn.Conv2d(3, 16, 3)
        self.depthwise = nn.Conv2d(20, 20, 3, groups=20)

    def forward(self, x, img):
        y = triton_convolution(
            x, self.wide.weight, self.wide.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1
        )
        z = triton_convolution(img, self.stem.weight, self.stem.bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        d = triton_convolution(y, self.depthwise.weight, self.depthwise.bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 20)
        return y, z, d
"""
)

SCRIPT = r"""
import json, sys, torch
from tools.draft.conv_picks import pick_conv_variants

calls, checked = [], []

def timer(run):
    info = run.info
    key = [info["site"], bool(info.get("X_LAST")), info.get("precision", "as written"),
           bool(info.get("X_SPLIT"))] + ([True] if info.get("DIRECT_2D") else [])
    key += ["PART_SUM"] if info.get("PART_SUM") else []
    calls.append(key)
    if calls.count(key) == 1:
        run()  # each variant really runs (interpreter) once
    site, x_last, precision, x_split = key[:4]
    if site == 2:
        return 1.0 if info.get("DIRECT_2D") else 2.0  # the depthwise call: 2D tiles faster
    assert not x_last  # X_LAST is no longer a draft-time variant
    if site == 0:
        if precision == "ieee":
            return 2.5  # exact products: slower than bf16x3 here
        if x_split:  # PART_SUM (plain X_SPLIT failed its accuracy check, never timed)
            assert info.get("PART_SUM")
            # another job's burst during its first turn: 3.0 then, 1.0 when timed again
            return 3.0 if calls.count(key) == 1 else 1.0
        return {"as written": 2.0, "bf16x3": 1.4}[precision]
    return 2.0 if precision == "as written" else 1.0  # site 1: bf16x3 would be faster

def accuracy(outs, args, kwargs):
    checked.append([list(args[0].shape), sorted(outs)])
    if args[0].shape[1] == 3:
        return {name: (False, "scripted: bf16x3 too far from fp64 here") for name in outs}
    return {name: (name != "bf16x3 X_SPLIT", f"scripted: {name} close enough or not")
            for name in outs}

source = open(sys.argv[1]).read()
torch.manual_seed(0)
x, img = torch.randn(1, 16, 5, 6), torch.randn(2, 3, 6, 5)
picked, notes = pick_conv_variants(source, [], [x, img], "cpu", timer=timer, accuracy=accuracy)

import importlib.util, os
path = os.path.join(sys.argv[3], "picked.py")
open(path, "w").write(picked)
spec = importlib.util.spec_from_file_location("picked", path)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
torch.manual_seed(1)
model = m.ModelNew()
with torch.no_grad():
    y, z, d = model(x, img)
    errs = [float((y - model.wide(x)).abs().max()), float((z - model.stem(img)).abs().max()),
            float((d - model.depthwise(model.wide(x))).abs().max())]
json.dump({"picked": picked, "notes": notes, "calls": calls, "checked": checked, "errs": errs},
          open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv_picks")
    src = tmp / "draft.py"
    src.write_text(DRAFT)
    out = tmp / "out.json"
    return run_json_script(SCRIPT, out, src, out, tmp)


def _keywords(source: str) -> dict[int, dict]:
    return {
        site: {k.arg: k.value.value for k in call.keywords}
        for site, call in tune.conv_sites(source).items()
    }


def test_the_fastest_variant_over_the_rounds_is_written_at_its_own_site(result):
    from tools.draft.conv_picks import ROUNDS

    kw = _keywords(result["picked"])
    # site 0 (16 channels, NCHW): plain X_SPLIT failed its accuracy check; X_SPLIT with each
    # step's products summed apart (PART_SUM) passed it and is picked, though its first turn
    # was the slowest of all; its tile is left to the candidate's autotuner
    assert kw[0] == {"precision": "bf16x3", "X_SPLIT": True, "PART_SUM": True}
    # site 1 (3 channels, 27 products an output): bf16x3 failed the accuracy check, so it was
    # never timed or written; X_SPLIT's layout with exact products (no accuracy check: fp32
    # products) was timed and is faster; X_LAST does not apply (no channel loop); site 2
    # (depthwise, no tl.dot): only the 2D-tiled direct kernel applies, and is faster
    assert kw[1] == {"precision": "ieee", "X_SPLIT": True} and kw[2] == {"DIRECT_2D": True}
    site0 = [c for c in result["calls"] if c[0] == 0]
    # as written, X_SPLIT with PART_SUM, bf16x3, exact X_SPLIT (144 products; not X_SPLIT 128
    # wide: 20 output channels; not plain X_SPLIT: refused): every round
    assert len(site0) == 4 * ROUNDS
    assert sum(c[3] and c[2] == "bf16x3" for c in site0) == ROUNDS
    assert all(c[-1] == "PART_SUM" for c in site0 if c[3] and c[2] == "bf16x3")
    site1 = [c for c in result["calls"] if c[0] == 1]
    assert {tuple(c) for c in site1} == {(1, False, "as written", False), (1, False, "ieee", True)}
    site2 = {tuple(c) for c in result["calls"] if c[0] == 2}
    assert site2 == {(2, False, "as written", False), (2, False, "as written", False, True)}
    # both bf16x3 kernels checked in one call (one fp64 reference); the depthwise call (no
    # tl.dot) no check at all
    # PART_SUM (for accuracy only) checked in a second call, where plain X_SPLIT was refused
    # (issue 35) a kernel accepted on the input as it came is checked again on it x100 and +3
    # (GATE_INPUTS), one refused at once is not
    split, part = ["bf16x3", "bf16x3 X_SPLIT"], ["bf16x3 X_SPLIT PART_SUM"]
    assert result["checked"] == [
        [[1, 16, 5, 6], split], [[1, 16, 5, 6], ["bf16x3"]], [[1, 16, 5, 6], ["bf16x3"]],
        [[1, 16, 5, 6], part], [[1, 16, 5, 6], part], [[1, 16, 5, 6], part],
        [[2, 3, 6, 5], split], [[2, 3, 6, 5], part],
    ]  # fmt: skip


def test_notes_say_what_was_picked_and_why_not(result):
    notes = "\n".join(result["notes"])
    assert (
        "conv#0" in notes and "picked on the GPU at draft time, 1.000 ms against 2.000 ms" in notes
    )
    assert "conv#1" in notes and "scripted: bf16x3 too far from fp64 here" in notes
    assert "conv#1 (2x3x6x5 * 16x3x3x3): precision='ieee', X_SPLIT=True picked" in notes
    assert "conv#2 (1x20x5x6 * 20x1x3x3): DIRECT_2D=True picked" in notes


def test_rewritten_draft_still_computes_the_convolutions(result):
    assert max(result["errs"]) < 1e-4, result["errs"]


def test_report_precision_names_bf16x3(result):
    assert tune.precisions(result["picked"]) == ["bf16x3", "ieee", "tf32x3"]


CHECK = r"""
import json, sys, torch
from tools.draft.conv_picks import bf16x3_accuracy

torch.manual_seed(0)
x = torch.randn(4, 16, 12, 12)
w = torch.randn(24, 16, 3, 3) * 0.1
b = torch.randn(24)
args = (x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
exact = torch.convolution(x.double(), w.double(), b.double(), *args[3:]).float()
def rounded(t, bits):  # the operands rounded to `bits` mantissa bits
    m, e = torch.frexp(t.double())
    return torch.ldexp(torch.round(m * 2**bits) / 2**bits, e).float()
tf32 = torch.convolution(rounded(x, 11), rounded(w, 11), b, *args[3:])
xh, wh = rounded(x, 8), rounded(w, 8)
bf16x3 = torch.convolution(xh.double(), wh.double(), None, *args[3:]) + torch.convolution(
    (x - xh).double(), wh.double(), None, *args[3:]) + torch.convolution(
    xh.double(), (w - wh).double(), b.double(), *args[3:])
th, tw = rounded(x, 11), rounded(w, 11)  # three TF32 products: tf32x3, about fp32 accuracy
tf32x3 = torch.convolution(th.double(), tw.double(), None, *args[3:]) + torch.convolution(
    rounded(x - th, 11).double(), tw.double(), None, *args[3:]) + torch.convolution(
    th.double(), rounded(w - tw, 11).double(), b.double(), *args[3:])
outs = {"exact": exact, "tf32": tf32, "bf16x3": bf16x3.float(), "tf32x3": tf32x3.float()}
out = {name: bf16x3_accuracy({name: t}, args, {})[name] for name, t in outs.items()}
out["together"] = bf16x3_accuracy(outs, args, {})  # one reference for several outputs
# a batch chunked into single samples gives the same answer
import tools.draft.conv_picks as cp
cp.CHUNK_BYTES = 1
out["chunked_tf32"] = bf16x3_accuracy({"tf32": tf32}, args, {})["tf32"]
json.dump(out, open(sys.argv[1], "w"))
"""


def test_accuracy_check_takes_fp32_like_and_refuses_tf32_and_bf16x3_like_outputs(tmp_path):
    out = tmp_path / "acc.json"
    got = run_json_script(CHECK, out, out, interpret=False)
    assert got["exact"][0] is True
    assert got["tf32x3"][0] is True, got["tf32x3"][1]
    # bf16x3 (8-bit operands split in two): its largest error is 8x cuDNN fp32's, under the
    # whole-output ratio, but elements past half the judge's per-element factor refuse it (on
    # the H200 the judge refused such convolutions: session 15)
    assert got["bf16x3"][0] is False and "lower precision" in got["bf16x3"][1], got["bf16x3"]
    from tools.draft.conv_picks import BF16X3_MAX_RATIO

    assert got["tf32"][0] is False and f"over {BF16X3_MAX_RATIO:g}x" in got["tf32"][1]
    # the same verdict and largest error (cuDNN's own fp32 error may differ by chunk)
    assert got["chunked_tf32"][0] is False
    assert got["chunked_tf32"][1].split(",")[0] == got["tf32"][1].split(",")[0]
    for name in ("exact", "tf32", "bf16x3", "tf32x3"):  # one reference for all: the same verdicts
        assert got["together"][name] == got[name]


BUDGET_SCRIPT = r"""
import json, sys, torch
import tools.draft.conv_picks as cp

cp.BUDGET_S = 0.0  # spent before the first variant: only the call as written is timed
labels = []
def timer(run):
    labels.append(run.label)
    run()
    return 1.0
source = open(sys.argv[1]).read()
torch.manual_seed(0)
x, img = torch.randn(1, 16, 5, 6), torch.randn(2, 3, 6, 5)
picked, notes = cp.pick_conv_variants(
    source, [], [x, img], "cpu", timer=timer, accuracy=lambda outs, a, k: {name: (True, "ok") for name in outs})
json.dump({"labels": labels, "notes": notes, "same": picked == source}, open(sys.argv[2], "w"))
"""


def test_no_variant_is_compiled_once_the_drafts_budget_is_spent(tmp_path):
    src = tmp_path / "draft.py"
    src.write_text(DRAFT)
    out = tmp_path / "out.json"
    got = run_json_script(BUDGET_SCRIPT, out, str(src), str(out))
    assert got["same"] and all(label.endswith("as written") for label in got["labels"])
    notes = "\n".join(got["notes"])
    # X_SPLIT, bf16x3, exact (PART_SUM only where X_SPLIT's accuracy was checked and refused)
    assert "conv#0" in notes and "3 variant(s) not timed" in notes


def test_x_split_is_timed_128_wide_only_for_wide_groups():
    from tools.draft.conv_picks import VARIANTS, applicable

    wide = next(v for v in VARIANTS if v.get("BLOCK_N") == 128)
    geometry = {"gemm": True, "tap_loop": True, "nchw": True, "fp32": True, "c_out_g": 64}
    assert not applicable(wide, geometry, {})
    assert applicable(wide, {**geometry, "c_out_g": 128}, {})
    assert not applicable(wide, {**geometry, "c_out_g": 128, "fp32": False}, {})
    # the call already set to another precision by the tuner is left alone
    assert not applicable(wide, {**geometry, "c_out_g": 128}, {"precision": "ieee"})


def test_exact_x_split_is_timed_only_for_small_reductions():
    from tools.draft.conv_picks import EXACT_MAX_K, VARIANTS, applicable

    exact = next(v for v in VARIANTS if v.get("precision") == "ieee")
    geometry = {"gemm": True, "tap_loop": False, "nchw": True, "fp32": True, "c_out_g": 16}
    assert applicable(exact, {**geometry, "k": 81}, {})  # 3 channels, 3x3x3 taps
    assert not applicable(exact, {**geometry, "k": EXACT_MAX_K + 1}, {})
    assert not applicable(exact, {**geometry, "k": 81, "fp32": False}, {})


def test_2d_tiles_are_timed_for_forward_direct_convolutions_of_1_or_2_dimensions():
    from tools.draft.conv_picks import VARIANTS, applicable

    tiles = next(v for v in VARIANTS if v.get("DIRECT_2D"))
    depthwise = {"gemm": False, "tap_loop": False, "nchw": True, "fp32": True, "c_out_g": 1,
                 "k": 9, "nd": 2, "transposed": False}  # fmt: skip
    assert applicable(tiles, depthwise, {})
    assert not applicable(tiles, {**depthwise, "nd": 3}, {})
    assert not applicable(tiles, {**depthwise, "transposed": True}, {})
    assert not applicable(tiles, {**depthwise, "gemm": True}, {})


def test_a_128_wide_x_split_pick_is_written_with_its_tile():
    """The 128-wide variant is bound to the tile it was timed at; the others are not."""
    import torch

    from tools.draft.conv_picks import TILE, _pick_one

    x, w = torch.zeros(1, 16, 4, 4), torch.zeros(128, 16, 3, 3)

    def real(*args, **kwargs):
        return torch.zeros(1, 128, 2, 2)

    def timer(run, fastest):
        v = run.info
        key = ("wide" if v.get("BLOCK_N") else "split") if v.get("X_SPLIT") else v.get("precision")
        return 0.5 if key == fastest else {"wide": 1.0, "split": 1.5, "bf16x3": 1.8, None: 2.0}[key]

    def accuracy(outs, args, kwargs):
        return {name: (True, "scripted") for name in outs}

    values, note = _pick_one(0, real, (x, w), {}, lambda run: timer(run, "wide"), accuracy)
    assert values == {
        "BLOCK_M": TILE[0], "BLOCK_N": 128, "BLOCK_K": TILE[2], "num_warps": TILE[3],
        "num_stages": TILE[4], "precision": "bf16x3", "X_SPLIT": True,
    }  # fmt: skip
    assert "BLOCK_N=128 picked" in note
    values, _ = _pick_one(0, real, (x, w), {}, lambda run: timer(run, "split"), accuracy)
    assert values == {"precision": "bf16x3", "X_SPLIT": True}


def test_a_1x1_convolution_is_timed_as_a_gemm_only_where_that_applies():
    import torch

    from tools.draft.conv_picks import VARIANTS, applicable, conv_geometry

    as_gemm = next(v for v in VARIANTS if v.get("AS_GEMM"))
    x = torch.zeros(2, 8, 5, 6)
    w1, w3 = torch.zeros(16, 8, 1, 1), torch.zeros(16, 8, 3, 3)
    plain = (1, 1), (0, 0), (1, 1), False, (0, 0), 1
    assert applicable(as_gemm, conv_geometry((x, w1, None, *plain), {}), {})
    assert not applicable(as_gemm, conv_geometry((x, w3, None, *plain), {}), {})
    strided = (2, 2), (0, 0), (1, 1), False, (0, 0), 1
    assert not applicable(as_gemm, conv_geometry((x, w1, None, *strided), {}), {})
    channels_last = x.to(memory_format=torch.channels_last)
    assert not applicable(as_gemm, conv_geometry((channels_last, w1, None, *plain), {}), {})


def test_part_sum_is_not_run_where_plain_x_split_is_accurate():
    """PART_SUM is there for accuracy only (slower than plain X_SPLIT wherever both were timed
    on the H200): where plain X_SPLIT passes its accuracy check, PART_SUM is neither run nor
    timed, and costs the draft nothing."""
    import torch

    from tools.draft.conv_picks import _pick_one

    ran, timed = [], []

    def real(*args, **kwargs):
        ran.append(kwargs)
        return torch.zeros(1)

    def timer(run):
        timed.append(run.info)
        return 2.0 if len(run.info) == 1 else 1.0  # only the site: as written, the slowest

    def accuracy(outs, args, kwargs):
        return {name: (True, f"scripted: {name} close enough") for name in outs}

    x, w = torch.zeros(1, 16, 5, 6), torch.zeros(20, 16, 3, 3)
    keywords, note = _pick_one(0, real, (x, w, None), {}, timer, accuracy)
    assert keywords.get("X_SPLIT") and "picked" in note
    assert ran and timed
    assert not any(k.get("PART_SUM") for k in ran), ran
    assert not any(i.get("PART_SUM") for i in timed), timed
