"""A scale computed from a size in fp64 (`1.0 / math.sqrt(k.size(-1))`, KernelBench level3/50's
attention): in a dynamic draft Inductor computes it inside the kernel, `libdevice.sqrt` of an
fp64 value, and the CPU drafter wrote `tl.sqrt_rn`, which takes fp32 only: the candidate failed
to compile ("Expected dtype ['fp32'] but got fp64"; level3/50 reduced: `compile_error` in
benchmarks/results/level3_cpu_survey.md). The helper now takes `tl.sqrt` for fp64. Drafted on
the CPU, then run under the interpreter against Model. About 15 s of CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBLEM = '''
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_head):
        super().__init__()
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        k = x.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        return torch.relu(k * (1.0 / math.sqrt(k.size(-1))))


def get_inputs():
    return [torch.rand(2, 5, 12) - 0.5]


def get_init_inputs():
    return [3]
'''

DRAFT_AND_RUN = r"""
import importlib.util, json, os, subprocess, sys
from tools.draft import draft_candidate

problem, candidate = sys.argv[1], sys.argv[2]
r = draft_candidate(open(problem).read(), device="cpu")
open(candidate, "w").write(r.source)
run = '''
import importlib.util, json, sys
import torch
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
p, c = load("p", sys.argv[1]), load("c", sys.argv[2])
model, new = p.Model(*p.get_init_inputs()), c.ModelNew(*p.get_init_inputs())
errors = []
for shape in [(2, 5, 12), (3, 4, 27)]:  # the second: other sizes, the same draft
    x = torch.rand(*shape) - 0.5
    errors.append(float((model(x) - new(x)).abs().max()))
print(json.dumps(errors))
'''
env = {**os.environ, "TRITON_INTERPRET": "1"}
proc = subprocess.run([sys.executable, "-c", run, problem, candidate], env=env,
                      capture_output=True, text=True)
print(json.dumps({"dynamic": r.dynamic, "rc": proc.returncode, "stdout": proc.stdout,
                  "stderr": proc.stderr[-3000:]}))
"""


def test_an_fp64_sqrt_of_a_size_runs_under_the_interpreter(tmp_path):
    problem, candidate = tmp_path / "problem.py", tmp_path / "candidate.py"
    problem.write_text(PROBLEM)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, "-c", DRAFT_AND_RUN, str(problem), str(candidate)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["dynamic"]  # the size is read at run time: the sqrt is in the kernel
    source = candidate.read_text()
    assert "tl.float64" in source, "no fp64 in the kernel: the case is not exercised"
    assert result["rc"] == 0, result["stderr"]
    errors = json.loads(result["stdout"].strip().splitlines()[-1])
    assert max(errors) < 1e-6, errors


def test_the_candidate_jobs_libdevice_sqrt_takes_fp64_and_fp32():
    """The candidate job runs `libdevice.sqrt` of a candidate through the same table under the
    interpreter (tools/job/interp_libdevice.py)."""
    code = r"""
import json, math, torch, triton, triton.language as tl
from triton.language.extra import libdevice
from tools.job.interp_libdevice import LibdeviceAsTl

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y_ptr + i, libdevice.sqrt(tl.load(x_ptr + i, mask=i < n)), mask=i < n)

shim = LibdeviceAsTl()
restore = shim.patch(k.fn.__globals__)
out = {}
try:
    for dtype in (torch.float64, torch.float32):
        x = torch.tensor([2.0, 3.0, 1e-300 if dtype == torch.float64 else 1e-30], dtype=dtype)
        y = torch.empty_like(x)
        k[(1,)](x, y, 3, BLOCK=4)
        # correctly rounded (math.sqrt: IEEE's sqrt of the double; torch's CPU sqrt of fp64 is
        # an ulp off at 2.0 here), then rounded to fp32 where x is fp32
        want = torch.tensor([math.sqrt(v) for v in x.tolist()], dtype=torch.float64).to(dtype)
        out[str(dtype)] = bool(torch.equal(y, want))
finally:
    restore()
print(json.dumps(out))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "torch.float64": True,
        "torch.float32": True,
    }
