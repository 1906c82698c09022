"""bf16/fp16 drafts get tensor-core GEMMs and convolutions made for 2-byte operands (issue 36),
and fp32 drafts keep the source they had.

A half-precision draft's GEMM template sends fp16/bf16 operands to `_gemm_tc_kernel` (their own
dtype into tl.dot, an fp32 accumulator, the output cast back) at a 128x256x64 tile, padding K
and the rows to 16 elements where they are not: Triton pipelines the K loop with cp.async only
when it can prove 16-byte rows, and 2-byte loads are never cp.async copies. Its convolutions
autotune over 64-deep K tiles and copy an NCHW input channels-last first.

No GPU: the kernels run under the interpreter at fp16 (bf16 does not run there) against an
fp64 product of the same values at KernelBench's fp16 tolerance; their launches are recorded
there and compiled for sm_90 with the specialisation the GPU would give them, and the PTX must
hold wgmma on f16/bf16 operands into f32, cp.async copies (a pipelined loop), and no spills.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import EX, ROOT
from tools.compile import tune
from tools.core.problem_dtype import KERNELBENCH_TOLERANCE, PRECISION_ENV
from tools.kernels import gemm_template, triton_conv

RUN = r"""
import contextlib, io, importlib.util, json, re, sys, warnings
import torch, triton
import torch.nn.functional as F
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tools.compile.aot import _ptxas_usage
from tools.compile.jit_bridge import as_jit, compilable_language, unwrapped
from tools.compile.launch_record import record_launches

TOL = float(sys.argv[3])


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sm90(record, dtype="fp16", tile=None):
    # the recorded launch compiled for sm_90 as the GPU would specialise it; PTX facts
    with compilable_language(unwrapped(record.fn)):
        jit = as_jit(record.fn)
        names = list(jit.arg_names)
        signature = {n: record.signature[n].replace("fp16", dtype) for n in names}
        constexprs = {**record.constexprs, **(tile or {})}
        warps = constexprs.pop("num_warps", record.num_warps)
        stages = constexprs.pop("num_stages", record.num_stages)
        src = ASTSource(
            fn=jit, signature=signature,
            constexprs={(names.index(k),): v for k, v in constexprs.items() if k in names},
            attrs={(names.index(k),): [["tt.divisibility", 16]] for k in record.aligned},
        )
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": warps, "num_stages": stages})
    ptx = c.asm["ptx"]
    _, spills = _ptxas_usage(ptx, 90, c.metadata.name, True)
    return {
        "dots": sorted(set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.\w+\.(\w+\.\w+\.\w+)", ptx))),
        "cp_async": len(re.findall(r"cp\.async\.c[ag]\.shared", ptx)),
        "spills": spills or 0,
    }


def close(out, ref):
    # KernelBench's check (torch.allclose, atol = rtol) on the output as the kernel returned it
    return out.dtype == torch.float16 and bool(torch.allclose(out.double(), ref, atol=TOL, rtol=TOL))


found = {}
torch.manual_seed(0)
draft = load(sys.argv[1], "half_draft")
problem = load(sys.argv[2], "half_problem")
a, b = (t.half() for t in problem.get_inputs())
with record_launches() as records:
    out = draft.ModelNew().forward(a, b)
found["draft matmul"] = close(out, a.double() @ b.double())
tc = [r for r in records if r.name == "_gemm_tc_kernel"]
found["draft kernels"] = sorted({r.name for r in records})
found["draft sm90"] = {d: sm90(tc[0], d) for d in ("fp16", "bf16")} if tc else {}

gemm = draft.gemm
tile = {k: v for k, v in draft.HALF_TILE.items() if k != "precision"}
cases = {
    "addmm": (torch.randn(64, 96), torch.randn(96, 48), torch.randn(48), {}),
    "bmm": (torch.randn(3, 33, 80), torch.randn(3, 80, 20), None, {}),
    "split K": (torch.randn(16, 1000), torch.randn(1000, 16), None, {"SPLIT_K": 4}),
    "transposed B": (torch.randn(40, 64), torch.randn(48, 64).t(), None, {}),
}
for name, (x, y, bias, extra) in cases.items():
    x, y = x.half(), y.half()
    args = {"bias": bias.half(), "alpha": 0.5, "beta": 2.0} if bias is not None else {}
    ref = x.double() @ y.double()
    if bias is not None:
        ref = 0.5 * ref + 2.0 * bias.double()
    found[name] = close(gemm(x, y, **args, **{**tile, **extra}), ref)
with record_launches() as records:
    gemm(torch.randn(256, 128).half(), torch.randn(128, 512).half(), **tile)
found["aligned sm90"] = sm90(next(r for r in records if r.name == "_gemm_tc_kernel"))

conv = load(sys.argv[4], "half_conv")
x, w, bias = torch.randn(2, 64, 10, 10).half(), torch.randn(32, 64, 3, 3).half(), torch.randn(32).half()
with record_launches() as records:
    y = conv.triton_convolution(x, w, bias, padding=1)
found["conv 64->32 3x3"] = close(y, F.conv2d(x.double(), w.double(), bias.double(), padding=1))
found["conv kernels"] = sorted({r.name for r in records})
gemm_launch = next(r for r in records if r.name == "_conv_gemm_kernel")
found["conv sm90"] = {
    "x".join(map(str, (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"]))):
        sm90(gemm_launch, tile={**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages})
    for c in conv._half_gemm_configs()
}
x, w = torch.randn(2, 3, 23, 23).half(), torch.randn(16, 3, 5, 5).half()
y = conv.triton_convolution(x, w, None, stride=2, padding=2)
found["conv stem"] = close(y, F.conv2d(x.double(), w.double(), stride=2, padding=2))
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def half(tmp_path_factory):
    """The fp16 draft of examples/problems/matmul.py (67x129x95: K and the rows not multiples
    of 16) run under the interpreter, the template's other cases and a convolution from a
    half-precision candidate source, and each GEMM/conv launch compiled for sm_90."""
    from tools.draft import draft_candidate

    tmp = tmp_path_factory.mktemp("half")
    problem = EX / "problems" / "matmul.py"
    before = os.environ.get(PRECISION_ENV)
    os.environ[PRECISION_ENV] = "fp16"
    try:
        source = draft_candidate(problem.read_text()).source
    finally:
        if before is None:
            os.environ.pop(PRECISION_ENV)
        else:
            os.environ[PRECISION_ENV] = before
    draft = tmp / "half_draft.py"
    draft.write_text(source + f"\n\nHALF_TILE = {gemm_template.HALF_CONFIG!r}\n")
    conv = tmp / "half_conv.py"
    conv.write_text(triton_conv.candidate_source("fp16"))
    tol = str(KERNELBENCH_TOLERANCE["fp16"])
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    env.pop(PRECISION_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(draft), str(problem), tol, str(conv)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"source": source, **json.loads(proc.stdout.strip().splitlines()[-1])}


def test_the_half_draft_calls_the_tensor_core_gemm_at_a_2_byte_tile(half):
    assert "def _gemm_tc_kernel(" in half["source"] and tune.half_precision(half["source"])
    tile = ", ".join(f"{k}={v!r}" for k, v in gemm_template.HALF_CONFIG.items())
    assert tile in half["source"]
    fp32_tile = ", ".join(f"{k}={v!r}" for k, v in gemm_template.DEFAULT_CONFIG.items())
    assert fp32_tile not in half["source"]


def test_the_half_draft_runs_correct_at_fp16_on_the_tensor_core_kernel(half):
    assert half["draft matmul"] is True
    assert (
        "_gemm_tc_kernel" in half["draft kernels"] and "_gemm_kernel" not in half["draft kernels"]
    )


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_half_drafts_gemm_is_a_pipelined_wgmma_kernel_without_spills(half, dtype):
    """The draft's launch at 67x129x95 (padded to 16-element rows and K) at its own tile."""
    ptx = half["draft sm90"][dtype]
    mlir = {"fp16": "f16", "bf16": "bf16"}[dtype]
    assert ptx["dots"] == [f"f32.{mlir}.{mlir}"], ptx
    assert ptx["cp_async"] > 0 and ptx["spills"] == 0, ptx


def test_an_aligned_half_gemm_is_pipelined_too(half):
    ptx = half["aligned sm90"]
    assert ptx["dots"] == ["f32.f16.f16"] and ptx["cp_async"] > 0 and ptx["spills"] == 0, ptx


@pytest.mark.parametrize("case", ["addmm", "bmm", "split K", "transposed B"])
def test_the_half_gemm_is_correct_at_fp16(half, case):
    """Bias with alpha/beta, batches, fp32 partial sums of a split K, a column-major B: fp16
    outputs within KernelBench's fp16 tolerance of fp64 on the same values."""
    assert half[case] is True


def test_a_half_convolution_is_correct_and_reads_its_input_channels_last(half):
    assert half["conv 64->32 3x3"] is True and half["conv stem"] is True
    assert "_conv_channels_last_kernel" in half["conv kernels"]


def test_every_half_convolution_tile_compiles_to_a_pipelined_wgmma_kernel(half):
    compiled = half["conv sm90"]
    assert len(compiled) >= 6
    for tile, ptx in compiled.items():
        assert ptx["dots"] == ["f32.f16.f16"], (tile, ptx)
        assert ptx["cp_async"] > 0 and ptx["spills"] == 0, (tile, ptx)


def test_fp32_drafts_keep_their_gemm_and_convolution_source():
    assert gemm_template.gemm_source("fp32") is gemm_template.GEMM_SOURCE
    assert "_gemm_tc" not in gemm_template.GEMM_SOURCE
    assert gemm_template.config_for("fp32") == gemm_template.DEFAULT_CONFIG
    assert triton_conv.candidate_source("fp32") == triton_conv.candidate_source()
    assert "_conv_gemm_kernel_tuned_half" not in triton_conv.candidate_source()
    half = gemm_template.gemm_source("bf16")
    assert half.startswith(gemm_template.GEMM_SOURCE.split("    if N == 1 and K > 0")[0])


def test_an_fp32_draft_calls_the_template_as_before():
    from tools.draft import draft_candidate

    source = draft_candidate((EX / "problems" / "matmul.py").read_text()).source
    assert gemm_template.GEMM_SOURCE.strip() in source and not tune.half_precision(source)
    tile = ", ".join(f"{k}={v!r}" for k, v in gemm_template.DEFAULT_CONFIG.items())
    assert tile in source


def test_the_tuner_tries_2_byte_tiles_and_no_precisions_on_a_half_draft():
    call = "out = gemm(a, b, " + ", ".join(
        f"{k}={v!r}" for k, v in gemm_template.HALF_CONFIG.items()
    ) + ")\n"  # fmt: skip
    half = gemm_template.gemm_source("fp16") + "\n" + call
    fp32 = gemm_template.GEMM_SOURCE + "\n" + call
    half_tiles = tune.gemm_variants(half, "tiles", limit=64)
    assert len(half_tiles) == len(tune.HALF_GEMM_TILES) - 1  # the call's own tile is not a variant
    assert all("BLOCK_K=32" in d or "BLOCK_K=64" in d or "BLOCK_K=128" in d for d, _ in half_tiles)
    assert not [d for d, _ in tune.gemm_variants(half, "split_precision") if "precision" in d]
    assert [d for d, _ in tune.gemm_variants(fp32, "split_precision") if "precision" in d]
    assert len(tune.gemm_variants(fp32, "tiles", limit=64)) == len(tune.GEMM_TILES)


@pytest.mark.parametrize("name", ["GEMM", "convolution"])
def test_kernelbench_static_checker_accepts_the_half_precision_sources(name):
    """What bf16/fp16 drafts copy in: no `pass`, no try (KernelBench's checker refuses both),
    and KernelBench's own checker where ../shared/kernelbench-eval is present."""
    import importlib.util
    import re

    from tests.test_kernelbench_static import CHECKER, _without_comments

    source = {
        "GEMM": gemm_template.gemm_source("bf16"),
        "convolution": triton_conv.candidate_source("fp16"),
    }[name]
    code = _without_comments(source)
    assert not re.search(r"\bpass\b", code) and not re.search(r"^\s*try\s*:", code, re.MULTILINE)
    if CHECKER.exists():
        spec = importlib.util.spec_from_file_location("kernel_static_checker", CHECKER)
        checker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(checker)
        bypass, why = checker.check_code_bypass("import torch\nimport triton\n" + source)
        assert not bypass, why
