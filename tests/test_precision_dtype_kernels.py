"""The kernels compiler drafts copy into candidates take bf16/fp16 operands with fp32
accumulation (issue 36): this project's GEMM template (`tools.kernels.gemm_template`: GEMM and GEMV)
and its convolutions (`tools.kernels.triton_conv`). fp16 runs in the interpreter and is compared with an
fp64 reference of the same fp16 values; bf16 cannot run there, so the GEMM template is compiled
ahead of time for sm_90 (no GPU needed) and its dot read from the compiled kernel: a tensor-core
`warp_group_dot` of bf16 operands into an fp32 accumulator."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tools.kernels import gemm_template


@pytest.fixture(scope="module")
def gemm_module(tmp_path_factory):
    """`GEMM_SOURCE` as a module of its own (Triton reads a kernel's source from its file)."""
    path = tmp_path_factory.mktemp("gemm") / "gemm_mod.py"
    path.write_text(
        "import math\nimport torch\nimport triton\nimport triton.language as tl\n"
        + gemm_template.GEMM_SOURCE
    )
    spec = importlib.util.spec_from_file_location("gemm_mod_precision", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FP16_RUNS = """
import importlib.util, json, sys
import torch
import torch.nn.functional as F
spec = importlib.util.spec_from_file_location("gemm_mod_precision", sys.argv[1])
gemm_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gemm_mod)
from tools.kernels.triton_conv import triton_convolution

def half_ulps(out, ref):
    # the largest error in halves of an fp16 ulp of the reference element
    ulp = torch.finfo(torch.float16).eps * ref.abs().clamp_min(2.0**-14)
    return float(((out.double() - ref).abs() / (ulp / 2)).max())

found = {}
torch.manual_seed(0)
for m, k, n in ((37, 70, 45), (64, 333, 1)):  # GEMM and GEMV, odd sizes
    a, b, bias = torch.randn(m, k).half(), torch.randn(k, n).half(), torch.randn(n).half()
    out = gemm_mod.gemm(a, b, bias=bias, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
    ref = a.double() @ b.double() + bias.double()
    found[f"gemm {m}x{k}x{n}"] = [str(out.dtype), half_ulps(out, ref)]
x, w, b = torch.randn(2, 3, 9, 11).half(), torch.randn(5, 3, 3, 3).half(), torch.randn(5).half()
y = triton_convolution(x, w, b, padding=1)
ref = F.conv2d(x.double(), w.double(), b.double(), padding=1)
found["conv 3x3"] = [str(y.dtype), half_ulps(y, ref)]
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def fp16_runs(gemm_module):
    """The GEMM template (GEMM and GEMV) and a 3x3 convolution on fp16 operands, under the
    interpreter in a process of their own (Triton reads TRITON_INTERPRET when `@triton.jit`
    runs): per case, the output's dtype and its largest error against fp64 in halves of an fp16
    ulp of the element."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", FP16_RUNS, gemm_module.__file__],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["gemm 37x70x45", "gemm 64x333x1", "conv 3x3"])
def test_fp16_operands_accumulate_in_fp32(fp16_runs, case):
    """fp32 accumulation and one rounding to fp16: within about one rounding of the output
    (an fp16 accumulator over K = 27..333 terms errs many times that)."""
    dtype, err = fp16_runs[case]
    assert dtype == "torch.float16" and err <= 2.5, (case, err)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_gemm_template_compiles_to_tensor_cores_at_half_precision(gemm_module, dtype):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    jit = gemm_module._gemm_kernel
    names = list(jit.arg_names)
    const = dict(HAS_BIAS=False, PARTIAL=False, PRECISION="ieee", BLOCK_M=128, BLOCK_N=128,
                 BLOCK_K=32, GROUP_M=8, HINT_M=True, HINT_N=True)  # fmt: skip
    signature = {
        n: "constexpr" if n in const
        else f"*{dtype}" if n.endswith("_ptr")
        else "fp32" if n in ("alpha", "beta")
        else "i32"
        for n in names
    }  # fmt: skip
    src = ASTSource(
        fn=jit, signature=signature, constexprs={(names.index(k),): v for k, v in const.items()}
    )
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    dots = [line for line in compiled.asm["ttgir"].splitlines() if "warp_group_dot" in line]
    mlir = {"bf16": "bf16", "fp16": "f16"}[dtype]
    assert dots and all(f"x{mlir}" in d and "xf32" in d for d in dots), dots[:1]
