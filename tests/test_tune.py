"""Launch-parameter variants (tools.compile.tune): pure source rewriting, checked on real kernels."""

from __future__ import annotations

import ast

from tests.helpers import EX
from tools.compile import tune


def test_finds_launch_kwargs_and_block_assignments():
    src = (EX / "kernels" / "relu_inductor_style.py").read_text()
    names = {k.name: k.value for k in tune.find_knobs(src)}
    assert names == {"XBLOCK": 128, "num_warps": 4, "num_stages": 1}


def test_variants_change_one_knob_and_stay_valid_python():
    src = (EX / "kernels" / "relu_inductor_style.py").read_text()
    variants = tune.one_at_a_time(src, limit=50)
    assert variants, "no variants"
    for desc, code in variants:
        ast.parse(code)
        changed = [a for a, b in zip(src.splitlines(), code.splitlines()) if a != b]
        assert len(changed) == 1, desc
    descs = " ".join(d for d, _ in variants)
    assert "XBLOCK=512" in descs and "num_warps=8" in descs and "num_stages=3" in descs
    # block sizes stay powers of two within bounds
    for k in tune.find_knobs(src):
        for v in tune.candidates_for(k):
            if k.kind == "block":
                assert v & (v - 1) == 0 and tune.BLOCK_MIN <= v <= tune.BLOCK_MAX


def test_kernel_with_no_literal_parameters_has_no_variants():
    src = "import triton\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\ndef launch(x, b):\n    k[(1,)](x, B=b)\n"
    assert tune.one_at_a_time(src) == []


def test_jit_function_bodies_are_not_rewritten():
    src = (
        "import triton\n@triton.jit\ndef k(x):\n    BLOCK = 128\n"
        "def launch(x):\n    BLOCK_SIZE = 256\n    k[(1,)](x, num_warps=4)\n"
    )
    names = [k.name for k in tune.find_knobs(src)]
    assert names == ["BLOCK_SIZE", "num_warps"]


def test_gemm_calls_are_tuned_in_stages_other_launches_by_knob():
    from agent.tuning import _stages
    from tools.kernels.gemm_template import call_for

    gemm = "def f(a, b):\n    return " + call_for("mm", ["a", "b"], {}) + "\n"
    assert _stages(gemm, 16) == [("tiles", 10), ("split_precision", 6)]
    relu = (EX / "kernels" / "relu_inductor_style.py").read_text()
    assert _stages(relu, 16) == [("knobs", 16)]


def test_alternative_inductor_settings_only_where_they_change_something():
    from tools.draft import SETTINGS, alternative_settings

    # coordinate descent and max-autotune benchmark: on the CPU path they would draft the default
    assert alternative_settings("cpu") == [
        "static_sizes",
        "no_split_reductions",
        "no_persistent_reductions",
    ]
    assert set(alternative_settings("cuda")) == set(SETTINGS) - {"default"}
    assert "inductor_conv" in alternative_settings("cuda")  # Inductor benchmarks its templates


def test_no_alternative_drafts_without_timings():
    """On the CPU nothing is timed: the tuner must not spend drafts on other settings."""
    from types import SimpleNamespace

    from agent.tuning import _alternative_drafts

    class Drafter:
        def draft(self, *args, **kwargs):
            raise AssertionError("drafted on the CPU")

    best = {"source": "compiler", "speedups": {}, "code": "x"}
    ctx = SimpleNamespace(drafter=Drafter(), device="cpu", emit=lambda *a, **k: None)
    assert _alternative_drafts(ctx, {}, best, limit=4) == []
    ctx.device = "cuda"
    best["speedups"] = {"eager": 1.3}  # the draft already beats eager
    assert _alternative_drafts(ctx, {}, best, limit=4) == []


def test_a_slow_convolution_draft_tries_inductors_conv_templates_first():
    """Where the draft runs this project's convolution and eager is faster, the first other
    settings drafted keep Inductor's conv templates (epilogue fused); without a convolution
    those settings are never drafted (they would draft the default again)."""
    from types import SimpleNamespace

    from agent.tuning import _alternative_drafts

    asked = []

    class Drafter:
        def draft(self, source, path, settings):
            asked.append(settings)
            return {"code": f"# {settings}"}

    ctx = SimpleNamespace(drafter=Drafter(), device="cuda", emit=lambda *a, **k: None)
    state = {"problem_source": "", "problem_path": "p.py"}
    conv = {
        "source": "compiler",
        "speedups": {"eager": 0.3},
        "code": "y = triton_convolution(x, w)",
    }
    assert [n for n, _ in _alternative_drafts(ctx, state, conv, limit=2)] == [
        "inductor_conv",
        "static_sizes",
    ]
    asked.clear()
    plain = {"source": "compiler", "speedups": {"eager": 0.5}, "code": "gemm(a, b)"}
    _alternative_drafts(ctx, state, plain, limit=10)
    assert asked and "inductor_conv" not in asked
    # a network's draft is static already (`sizes="auto"`): "static_sizes" would draft it again
    asked.clear()
    network = {**conv, "code": '"""Sizes are fixed: block sizes, ..."""\n' + conv["code"]}
    _alternative_drafts(ctx, state, network, limit=10)
    assert asked and "static_sizes" not in asked and asked[0] == "inductor_conv"


_SETTINGS_DRAFT = r"""
import json, sys
from tools.draft import draft_candidate
src = '''
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(8, 300)]
def get_init_inputs():
    return []
'''
settings = ("default", "static_sizes", "no_persistent_reductions")
out = {}
for s in settings:
    r = draft_candidate(src, settings=s)
    out[s] = [r.kernels, r.dynamic]
print(json.dumps(out))
"""


def test_other_inductor_settings_draft_other_kernels():
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", _SETTINGS_DRAFT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    drafts = json.loads(proc.stdout.strip().splitlines()[-1])
    # A dynamic draft's row length is symbolic, so its softmax loops; with the sizes fixed the
    # row fits one block (persistent), unless persistent reductions are switched off.
    assert drafts["default"] == [["triton_red_fused__softmax_0"], True], drafts
    assert drafts["static_sizes"] == [["triton_per_fused__softmax_0"], False], drafts
    assert drafts["no_persistent_reductions"] == [["triton_red_fused__softmax_0"], False], drafts


def test_full_precision_variant_sets_every_gemm_and_conv_call_to_ieee():
    """The fallback the loop tries when a reduced-precision draft is a mismatch (KernelBench
    level2/14 on the H200: tf32x3's error summed over 8192 GEMM outputs passed 1e-4)."""
    source = (
        "def call(args):\n"
        "    gemm(a, b, out=c, BLOCK_M=128, SPLIT_K=0, precision='tf32x3')\n"
        "    y = triton_convolution(x, w, stride=(1, 1), groups=1, bias=None)\n"
        "    z = triton_convolution(x, w, stride=(2, 2), groups=1, bias=None, precision='bf16x3')\n"
        "    gemm(c, d, out=e, BLOCK_M=64, precision='ieee')\n"
        "    return y, z, e\n"
    )
    full = tune.full_precision_variant(source)
    assert full is not None
    ast.parse(full)
    # an unset conv precision is tf32x3 (CONV_PRECISIONS[0]): it is set explicitly
    assert tune.precisions(source) == ["tf32x3", "tf32x3", "bf16x3", "ieee"]
    assert tune.precisions(full) == ["ieee"] * 4
    assert "BLOCK_M=128" in full and "stride=(2, 2)" in full  # nothing else changed
    assert tune.full_precision_variant(full) is None  # already full precision: nothing to try
    assert tune.full_precision_variant("def call(args):\n    return relu(x)\n") is None


def test_conv_templates_keep_inductors_triton_choices_for_convolutions_only():
    from torch._inductor.select_algorithm import ExternKernelCaller, TritonTemplateCaller

    from tools.draft.inductor_patches import choices_kept

    ext, tem = object.__new__(ExternKernelCaller), object.__new__(TritonTemplateCaller)

    def original(self, name, choices, *args, **kwargs):
        return choices

    default = choices_kept(original, first_only=False)
    templates = choices_kept(original, first_only=False, conv_templates=True)
    assert default(None, "convolution", [ext, tem]) == [ext]  # this project's kernel
    assert templates(None, "convolution", [ext, tem]) == [tem]  # Inductor's template
    assert templates(None, "convolution", [ext]) == [ext]  # none applies: the library call
    assert templates(None, "mm", [ext, tem]) == [ext]  # GEMMs: this project's template still
