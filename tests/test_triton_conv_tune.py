"""The tuner's convolution knobs (tools.compile.tune.conv_variants) and the precisions they name.

A draft calls `triton_convolution(...)` without keywords; the tuner adds a whole tile
(`CONV_TILES`), then tries the other tl.dot input precisions on the best tile. Correctness of
each knob in the kernels is tests/test_triton_conv.py's job (its `*_tile_*` cases); here, the
source rewriting, and one ahead-of-time compile for sm_90 of the precision the interpreter
cannot run (bf16x3).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from tools.compile import tune
from tools.kernels.triton_conv import CONV_PRECISIONS

ROOT = Path(__file__).resolve().parent.parent

CANDIDATE = """
import torch

def triton_convolution(input, weight, bias=None, stride=1, padding=0, dilation=1,
                       transposed=False, output_padding=0, groups=1, *, precision=None,
                       BLOCK_M=None, BLOCK_N=None, BLOCK_K=None, num_warps=None, num_stages=None):
    return input

def call(args):
    arg0_1, arg1_1, arg2_1 = args
    buf0 = triton_convolution(arg2_1, arg0_1, stride=(1,), padding=(0,), dilation=(1,),
                              transposed=False, output_padding=(0,), groups=1, bias=arg1_1)
    return (buf0,)
"""


def _conv_keywords(source: str) -> dict:
    """The constant keywords of the host code's triton_convolution call."""
    compile(source, "<variant>", "exec")  # a repeated keyword is a SyntaxError here
    call = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "triton_convolution"
    )
    return {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)}


def test_a_conv_call_is_a_site_and_gets_every_tile():
    assert list(tune.conv_sites(CANDIDATE)) == [0]
    assert tune.gemm_sites(CANDIDATE) == {0: {}}  # what makes agent.tuning pick tile stages
    variants = tune.gemm_variants(CANDIDATE, "tiles", limit=50)
    assert len(variants) == len(tune.CONV_TILES)
    for (desc, source), tile in zip(variants, tune.CONV_TILES, strict=True):
        got = _conv_keywords(source)
        assert desc.startswith("conv#0: ")
        assert [got[k] for k in tune.CONV_TILE_KEYS] == list(tile), desc
        assert got["groups"] == 1 and got["transposed"] is False  # the draft's own keywords
    assert len(tune.gemm_variants(CANDIDATE, "tiles", limit=3)) == 3


def test_precision_stage_replaces_keywords_and_is_named():
    tiled = tune.gemm_variants(CANDIDATE, "tiles", limit=1)[0][1]
    assert tune.precisions(CANDIDATE) == ["tf32x3"]  # the default, named though not written
    stage = tune.gemm_variants(tiled, "split_precision", limit=50)
    got = [_conv_keywords(s).get("precision", "tf32x3") for _, s in stage]
    assert got == [*CONV_PRECISIONS[1:], "tf32x3", "tf32x3"]
    assert _conv_keywords(stage[-2][1])["SPLIT_W"] is True  # tf32x3, weights split first
    assert _conv_keywords(stage[-1][1])["PACK_W"] is False  # weights not repacked
    for _, source in stage:
        kw = _conv_keywords(source)
        assert kw["BLOCK_M"] == tune.CONV_TILES[0][0]  # the tile is kept
        assert tune.precisions(source) == [kw.get("precision", "tf32x3")]
    # a variant of a variant replaces the keyword rather than repeating it
    again = tune.gemm_variants(stage[0][1], "split_precision", limit=50)
    again = [_conv_keywords(s) for _, s in again]
    assert [kw["precision"] for kw in again] == ["tf32x3", "ieee", "tf32", "bf16x3"]
    assert again[-1]["PACK_W"] is False


def test_no_conv_call_no_conv_variants():
    plain = "def call(args):\n    return (torch.relu(args[0]),)\n"
    assert tune.conv_sites(plain) == {} and tune.gemm_sites(plain) == {}
    assert tune.conv_variants(plain, "tiles") == [] and tune.precisions(plain) == []


AOT_SCRIPT = r"""
import dataclasses, json, sys
import torch
from tools.compile.aot import aot_compile
from tools.compile.launch_record import record_launches
from tools.kernels.triton_conv import triton_convolution

x, w = torch.randn(1, 32, 6, 7), torch.randn(48, 32, 3, 3)
with record_launches() as records:
    triton_convolution(x, w, None, 1, 1, 1, False, 0, 1)
rec = next(r for r in records if r.name == "_conv_gemm_kernel")
rec = dataclasses.replace(
    rec, num_warps=8, num_stages=3,
    constexprs={**rec.constexprs, "PRECISION": "bf16x3", "BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32},
)
r = aot_compile(rec, "sm_90")
json.dump({"name": rec.name, "result": type(r).__name__, "spills": getattr(r, "spills_bytes", None),
           "message": getattr(r, "message", "")}, open(sys.argv[1], "w"))
"""


def test_bf16x3_compiles_for_sm90(tmp_path):
    """The interpreter has no bf16x3 (triton_convolution runs ieee there): the real compiler
    must take the implicit GEMM with it, without spilling, at the tuner's default tile."""
    out = tmp_path / "aot.json"
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [sys.executable, "-c", AOT_SCRIPT, str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(out.read_text())
    assert got["name"] == "_conv_gemm_kernel"
    assert got["result"] == "KernelResources", got["message"]
    assert got["spills"] == 0, got
