"""`benchmarks/gpu_generalize.py` (the generalisation check over a bench's candidates) on the CPU:
a kernel that takes its size from its input passes, one that hard-codes the problem's size
fails, and both are recorded in the table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RELU = (ROOT / "examples/kernels/relu.py").read_text()
# ReLU that reads its input as rows of the problem's 1000 columns, written in: right at that size
# only, and in bounds at every size (an out-of-bounds access under the interpreter can hang).
FIXED = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_rows_kernel(x_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs // cols) * 1000 + offs % cols
    x = tl.load(x_ptr + src, mask=(offs < n) & (src < n), other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _relu_rows_kernel[(triton.cdiv(n, 1024),)](x, y, n, x.shape[-1], BLOCK=1024)
        return y
"""


@pytest.mark.slow  # docs/testing.md: covered by test_generalize.py and test_verify.py
def test_bench_candidates_are_checked_at_other_sizes(tmp_path):
    kb, bench = tmp_path / "kb", tmp_path / "bench"
    kb.mkdir()
    for name, kernel in (("1_relu", RELU), ("2_relu_fixed", FIXED)):
        (kb / f"{name}.py").write_text((ROOT / "examples/problems/relu.py").read_text())
        (bench / name / "00").mkdir(parents=True)
        (bench / name / "00" / "kernel.py").write_text(kernel)
    (bench / "3_no_problem_file" / "00").mkdir(parents=True)  # no kb/3_....py: not checked
    (bench / "3_no_problem_file" / "00" / "kernel.py").write_text(RELU)
    out = tmp_path / "out"

    def run(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks/gpu_generalize.py"),
                str(bench),
                "--kb",
                str(kb),
                "--device",
                "cpu",
                "--jobs",
                "2",
                "--trials",
                "1",
                "--out",
                str(out),
                *more,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
        )

    proc = run()
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one failed
    rows = {r["problem"]: r for r in json.loads((out / "results.json").read_text())}
    assert set(rows) == {"1_relu", "2_relu_fixed"}
    assert rows["1_relu"]["status"] == "ok" and rows["1_relu"]["generalize"] == "passed"
    fixed = rows["2_relu_fixed"]
    assert fixed["status"] != "ok" and fixed["generalize"] == "failed", fixed
    table = (out / "table.md").read_text()
    assert "| passed | 1 |" in table and "| failed | 1 |" in table

    # A rerun of one problem as a reduced-size copy replaces its row and keeps the other.
    proc = run("--only", "1", "--shrink")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 2_relu_fixed's failure is kept
    rows = {r["problem"]: r for r in json.loads((out / "results.json").read_text())}
    assert set(rows) == {"1_relu", "2_relu_fixed"}
    assert rows["1_relu"]["shrunk"] == {"DIM": [1000, 40]}, rows["1_relu"]
    assert rows["1_relu"]["generalize"] == "passed", rows["1_relu"]
    assert "DIM = 40" in (out / "problems" / "1_relu.py").read_text()
    assert rows["2_relu_fixed"] == fixed


def test_libdevice_calls_become_the_cpu_drafters_tl_calls():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_generalize import libdevice_as_tl

    source = (
        "import triton.language as tl\nfrom triton.language.extra import libdevice\n\n"
        "y = libdevice.exp(x) + libdevice.tanh(x) + libdevice.tanh(z) + libdevice.j0(x)\n"
    )
    out, names = libdevice_as_tl(source)
    assert names == ["exp", "tanh"]
    assert "tl.exp(x) + libdevice_tanh(x) + libdevice_tanh(z) + libdevice.j0(x)" in out
    assert out.count("def libdevice_tanh(x):") == 1  # one helper, however many calls
    assert out.index("def libdevice_tanh") > out.index("from triton.language.extra import")
