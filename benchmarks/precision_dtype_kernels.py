"""The drafter's kernels on fp16 operands in the interpreter (issue 36): the largest error of the
GEMM template (GEMM, GEMV) and of a 3x3 convolution against fp64 of the same fp16 values, in
halves of an fp16 ulp of each element, beside an fp16 accumulator's over the same products (a
simulated kernel that rounds its running sum to fp16 after each term). CPU, a minute.

    TRITON_INTERPRET=1 python benchmarks/precision_dtype_kernels.py
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tools.kernels import gemm_template  # noqa: E402
from tools.kernels.triton_conv import triton_convolution  # noqa: E402


def half_ulps(out: torch.Tensor, ref: torch.Tensor) -> float:
    ulp = torch.finfo(torch.float16).eps * ref.abs().clamp_min(2.0**-14)
    return float(((out.double() - ref).abs() / (ulp / 2)).max())


def fp16_accumulator(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for i in range(a.shape[1]):
        acc = (acc.float() + a[:, i : i + 1].float() * b[i : i + 1, :].float()).half()
    return acc


def main() -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    path = os.path.join(tempfile.mkdtemp(), "gemm_mod.py")
    with open(path, "w") as f:
        f.write("import math\nimport torch\nimport triton\nimport triton.language as tl\n")
        f.write(gemm_template.GEMM_SOURCE)
    spec = importlib.util.spec_from_file_location("gemm_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    print("| case | our kernel (fp32 accumulator) | fp16 accumulator |")
    print("|---|---|---|")
    for m, k, n in ((37, 70, 45), (64, 333, 1)):
        a, b = torch.randn(m, k).half(), torch.randn(k, n).half()
        ref = a.double() @ b.double()
        ours = half_ulps(mod.gemm(a, b, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16), ref)
        print(f"| gemm {m}x{k}x{n} | {ours:.2f} | {half_ulps(fp16_accumulator(a, b), ref):.0f} |")
    x, w = torch.randn(2, 3, 9, 11).half(), torch.randn(5, 3, 3, 3).half()
    y = triton_convolution(x, w, None, padding=1)
    print(
        f"| conv 3x3, 2x3x9x11 -> 5 | {half_ulps(y, F.conv2d(x.double(), w.double(), padding=1)):.2f} | - |"
    )


if __name__ == "__main__":
    main()
