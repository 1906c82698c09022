"""A convolution's pointwise epilogue fused into its store (tools/draft/conv_epilogue.py).

Under the Triton interpreter, on a draft written the way the compiler drafter writes them (a
`call(args)` with `bufA = triton_convolution(...)`, the alias and `del`s Inductor emits, and an
Inductor-style `triton_poi_...(in_out_ptr0, ...)` kernel reading it): the pair is fused and the
fused draft computes what the unfused one does (and what PyTorch does); the pick takes it only
where its outputs match the unfused draft's and it is faster (scripted timer); drafts where a
non-pointwise kernel reads the output first, or the pointwise kernel reads it twice, are left
alone with a note; a fused call cannot run off the split path; the loop's full-precision
variant leaves a fused call alone. One real compiler draft (CPU Inductor) goes through it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_json_script
from tools.kernels.triton_conv import candidate_source

EPILOGUE = """
@triton.jit
def triton_poi_fused_bias_relu_0(in_out_ptr0, in_ptr0, xnumel, XBLOCK : tl.constexpr, KS0 : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x3 = xindex
    x1 = ((xindex // KS0) % 20)
    tmp0 = tl.load(in_out_ptr0 + (x3), xmask)
    tmp1 = tl.load(in_ptr0 + (x1), xmask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0.0, tl.float32)
    tmp4 = tl.where(tmp2 > tmp3, tmp2, tmp3)
    tl.store(in_out_ptr0 + (x3), tmp4, xmask)


@triton.jit
def triton_red_fused_sum_1(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    tl.store(out_ptr0 + xindex, tl.load(in_ptr0 + xindex, xindex < xnumel), xindex < xnumel)
"""

CALL = """

def call(args):
    x, w, b = args
    buf0 = triton_convolution(x, w, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None, precision='bf16x3', X_SPLIT=True)
    ps0 = x.shape[2] * x.shape[3]
    xnumel = 20 * x.shape[0] * ps0
    del x
    buf1 = buf0
    del buf0
    __PRE__
    triton_poi_fused_bias_relu_0[lambda meta: (triton.cdiv(xnumel, meta['XBLOCK']),)](buf1, b, xnumel, XBLOCK=64, KS0=ps0, num_warps=4, num_stages=1)
    del b
    return (buf1,)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 20, 3, padding=1)

    def forward(self, x):
        return call([x, self.conv.weight, self.conv.bias])[0]
"""


def draft(pre: str = "pass", epilogue: str = EPILOGUE) -> str:
    head = "import torch\nimport torch.nn as nn\n\n" + candidate_source() + epilogue
    return head + CALL.replace("__PRE__", pre)


SCRIPT = r"""
import json, sys, torch
import tools.draft.conv_epilogue as ce
from tools.compile.tune import full_precision_variant

drafts = json.load(open(sys.argv[1]))
out = {}
torch.manual_seed(0)
x = torch.randn(2, 16, 5, 6)
conv = torch.nn.Conv2d(16, 20, 3, padding=1)
torch.manual_seed(0)
ref_model = torch.nn.Conv2d(16, 20, 3, padding=1)  # ModelNew's conv, built under seed 0

def timer_for(fused_ms):
    def timer(run):  # the outputs were compared already: scripted times, no more forwards
        return fused_ms if run.info["fused"] else 2.0
    return timer

fused, notes = ce.fuse_conv_epilogues(drafts["plain"])
out["notes"] = notes
out["fused_has_epilogue"] = "EPILOGUE=(_conv_split_kernel_epi0" in fused
out["launch_left"] = "triton_poi_fused_bias_relu_0[" in fused
picked, pnotes = ce.pick_conv_epilogues(drafts["plain"], [], [x], "cpu", timer=timer_for(1.0))
out["taken"] = picked == fused
out["taken_notes"] = pnotes
picked, pnotes = ce.pick_conv_epilogues(drafts["plain"], [], [x], "cpu", timer=timer_for(1.99))
out["slow_kept"] = picked == drafts["plain"]
out["slow_notes"] = pnotes

# the fused draft against PyTorch
import importlib.util, os, tempfile
d = tempfile.mkdtemp()
path = os.path.join(d, "fused_draft.py"); open(path, "w").write(fused)
spec = importlib.util.spec_from_file_location("fused_draft", path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
torch.manual_seed(0)
model = m.ModelNew()
with torch.no_grad():
    got = model(x)
    ref = torch.relu(torch.nn.functional.conv2d(x.double(), model.conv.weight.double(), model.conv.bias.double(), padding=1))
out["fused_err"] = float((got.double() - ref).abs().max())

# a fused copy that computes something else is refused by the output check
real = ce.fuse_conv_epilogues
def wrong(source):
    text, notes = real(source)
    i = text.index("def _conv_split_kernel_epi0(")  # the fused copy's, not the original's
    return text[:i] + text[i:].replace("tmp2 = tmp0 + tmp1", "tmp2 = tmp0 - tmp1", 1), notes
ce.fuse_conv_epilogues = wrong
picked, pnotes = ce.pick_conv_epilogues(drafts["plain"], [], [x], "cpu", timer=timer_for(1.0))
ce.fuse_conv_epilogues = real
out["wrong_kept"] = picked == drafts["plain"]
out["wrong_notes"] = pnotes

for name in ("reduction_first", "loads_twice"):
    text, notes = ce.fuse_conv_epilogues(drafts[name])
    out[name] = {"same": text == drafts[name], "notes": notes}

# EPILOGUE off the split path
scope = {}
exec(compile(fused, "<fused>", "exec"), scope)
try:
    scope["triton_convolution"](x, conv.weight, precision="ieee",
                                EPILOGUE=(None, None, (), {}))
    out["off_split"] = "ran"
except ValueError as exc:
    out["off_split"] = str(exc)
full = full_precision_variant(fused)
out["full_keeps_fused"] = full is None or "EPILOGUE=(_conv_split_kernel_epi0" in full
json.dump(out, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv_epilogue")
    drafts = {
        "plain": draft(),
        # a reduction reads the convolution's output before the pointwise kernel
        "reduction_first": draft(
            pre="buf9 = torch.empty((4,)); triton_red_fused_sum_1[(1,)](buf1, buf9, 4, XBLOCK=4)"
        ),
        "loads_twice": draft(
            epilogue=EPILOGUE.replace(
                "    tmp2 = tmp0 + tmp1\n",
                "    tmp9 = tl.load(in_out_ptr0 + (x3), xmask)\n    tmp2 = tmp0 + tmp1 + tmp9\n",
            )
        ),
    }
    src = tmp / "drafts.json"
    src.write_text(json.dumps(drafts))
    out = tmp / "out.json"
    return run_json_script(SCRIPT, out, src, out)


def test_the_pair_is_fused_into_one_kernel(result):
    assert result["notes"] == [
        "buf0 = triton_convolution(...): triton_poi_fused_bias_relu_0 fused into its store"
    ]
    assert result["fused_has_epilogue"] and not result["launch_left"]


def test_the_fused_draft_computes_the_convolution_and_its_epilogue(result):
    # bf16x3 products: within a few 1e-5 of an fp64 reference at these magnitudes
    assert result["fused_err"] < 1e-3, result["fused_err"]


def test_taken_only_when_as_exact_and_faster(result):
    assert result["taken"], result["taken_notes"]
    assert "epilogue fusion taken" in result["taken_notes"][-1]
    assert "outputs within 0.0e+00" in result["taken_notes"][-1]
    assert result["slow_kept"] and "not taken (under 3% faster)" in result["slow_notes"][-1]
    assert (
        result["wrong_kept"]
        and "epilogue fusion refused: outputs differ" in result["wrong_notes"][-1]
    )


def test_other_shapes_of_draft_are_left_alone_with_a_reason(result):
    first = result["reduction_first"]
    assert first["same"]
    assert "triton_red_fused_sum_1, is not pointwise" in first["notes"][0]
    twice = result["loads_twice"]
    assert twice["same"] and "loads its in-place buffer 2x" in twice["notes"][0]


def test_a_fused_call_runs_only_on_the_split_path(result):
    assert "EPILOGUE needs the X_SPLIT path" in result["off_split"]
    assert result["full_keeps_fused"]


DRAFT_SCRIPT = r"""
import sys
from tools.draft import draft_candidate
from tools.compile.tune import conv_sites, _conv_variant

draft = draft_candidate(open(sys.argv[1]).read(), device="cpu").source
site, call = next(iter(conv_sites(draft).items()))
_, draft = _conv_variant(draft, site, call, {"precision": "bf16x3", "X_SPLIT": True})
open(sys.argv[2], "w").write(draft)
"""

PICK_SCRIPT = r"""
import json, sys, torch, importlib.util
from tools.draft.conv_epilogue import pick_conv_epilogues

draft = open(sys.argv[2]).read()
spec = importlib.util.spec_from_file_location("problem", sys.argv[1])
p = importlib.util.module_from_spec(spec); spec.loader.exec_module(p)
torch.manual_seed(1)
inputs = p.get_inputs()
def timer(run):  # the outputs were compared already: scripted times, no more forwards
    return 1.0 if run.info["fused"] else 2.0
picked, notes = pick_conv_epilogues(draft, p.get_init_inputs(), inputs, "cpu", timer=timer)
json.dump({"notes": notes, "fused": "EPILOGUE=(" in picked}, open(sys.argv[3], "w"))
"""


def test_a_real_compiler_draft_is_fused(tmp_path):
    """Inductor's own draft of a conv + min + add + multiply problem (level2/31's shape)."""
    problem = ROOT / "tests/fixtures/conv_epilogue/conv_min_add_mul.py"
    env = {
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
    }
    drafted = tmp_path / "draft.py"
    proc = subprocess.run(
        [sys.executable, "-c", DRAFT_SCRIPT, str(problem), str(drafted)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "X_SPLIT=True" in drafted.read_text()
    out = tmp_path / "picked.json"
    got = run_json_script(PICK_SCRIPT, out, problem, drafted, out, env=env, timeout=600)
    assert got["fused"], got["notes"]
    assert any("outputs within" in n for n in got["notes"]), got["notes"]
