"""Launch-parameter variants (tools.tune): pure source rewriting, checked on real kernels."""

from __future__ import annotations

import ast

from tests.helpers import EX
from tools import tune


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
