"""`benchmarks/gpu_generalize.py` (the generalisation check over a bench's candidates) on the CPU:
a kernel that takes its size from its input passes, one that hard-codes the problem's size
fails, and both are recorded in the table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELU = (ROOT / "examples/kernels/relu.py").read_text()
# The same kernel with the problem's 13 x 1000 elements written in: right at that size only.
FIXED = RELU.replace("n_elements = x.numel()", "n_elements = 13000").replace(
    "y = torch.empty_like(x)", "y = torch.zeros_like(x)"
)


def test_bench_candidates_are_checked_at_other_sizes(tmp_path):
    assert FIXED != RELU
    kb, bench = tmp_path / "kb", tmp_path / "bench"
    kb.mkdir()
    for name, kernel in (("1_relu", RELU), ("2_relu_fixed", FIXED)):
        (kb / f"{name}.py").write_text((ROOT / "examples/problems/relu.py").read_text())
        (bench / name / "00").mkdir(parents=True)
        (bench / name / "00" / "kernel.py").write_text(kernel)
    (bench / "3_no_problem_file" / "00").mkdir(parents=True)  # no kb/3_....py: not checked
    (bench / "3_no_problem_file" / "00" / "kernel.py").write_text(RELU)
    out = tmp_path / "out"
    proc = subprocess.run(
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
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one failed
    rows = {r["problem"]: r for r in json.loads((out / "results.json").read_text())}
    assert set(rows) == {"1_relu", "2_relu_fixed"}
    assert rows["1_relu"]["status"] == "ok" and rows["1_relu"]["generalize"] == "passed"
    fixed = rows["2_relu_fixed"]
    assert fixed["status"] != "ok" and fixed["generalize"] == "failed", fixed
    table = (out / "table.md").read_text()
    assert "| passed | 1 |" in table and "| failed | 1 |" in table
