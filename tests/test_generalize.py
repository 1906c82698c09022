"""--generalize on KernelBench's layout, and compiler drafts that hold at other sizes.

KernelBench writes sizes as lower-case module constants (`batch_size = 16`, `N = 2048 * 2`) used
by get_inputs/get_init_inputs. The plan (tools.orchestrate.generalize.generalization_plan) must find and vary
them, keep constructor settings (kernel_size, a reduction dim), halve constructor floats (eps).
End to end: a problem in that layout is drafted on the CPU, dynamic (sizes read at run time) and
static (sizes baked in), in ONE subprocess; the dynamic draft passes the generalisation check
and the static one fails it, with the sizes it depends on named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import ROOT
from tools.core.problem import problem_from_source
from tools.orchestrate.generalize import generalization_plan, generalization_sizes
from tools.orchestrate.verify import Verifier, VerifyOptions

KERNELBENCH_STYLE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, in_features, out_features, kernel_size, scaling_factor, eps=1e-5):
            super().__init__()
            self.linear = nn.Linear(in_features, out_features)
            self.kernel_size = kernel_size
            self.scaling_factor = scaling_factor
            self.eps = eps

        def forward(self, x):
            y = self.linear(x) * self.scaling_factor
            return y / torch.sqrt(torch.mean(y * y, dim=1, keepdim=True) + self.eps)

    batch_size = 16
    in_features = 4096 * 2
    out_features = 64
    kernel_size = 3
    flag = 1
    scaling_factor = 1.5
    hidden = in_features // 2
    unused_constant = 7

    def get_inputs():
        return [torch.randn(batch_size, in_features) * flag]

    def get_init_inputs():
        return [in_features, out_features, kernel_size, scaling_factor]
    """
)


def test_plan_reads_kernelbench_constants():
    problem = problem_from_source(KERNELBENCH_STYLE)
    assert problem.size_constants["in_features"] == 8192  # `4096 * 2` evaluated
    assert "unused_constant" not in problem.size_constants  # lower case and unused: not a size
    assert problem.size_uses["batch_size"] == "input"
    assert problem.size_uses["out_features"] == "init"
    plan = generalization_plan(problem)
    assert plan.sizes == {
        "batch_size": 9,
        "in_features": 4097,
        "out_features": 33,
        "scaling_factor": 0.75,
    }
    assert plan.input_sizes == {"batch_size": 9, "in_features": 4097}
    assert "kernel_size=3 (a constructor setting under 8)" in plan.kept
    assert "flag=1" in plan.kept
    varied = problem.with_sizes(**plan.sizes)
    assert "in_features = 4097" in varied.source and "hidden = in_features // 2" in varied.source


def test_derived_constants_follow_the_ones_they_are_computed_from():
    src = (
        "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
        "    def forward(self, a, b):\n        return a @ b\n"
        "N = 2048 * 2\nM = N // 2\n"
        "def get_inputs():\n    return [torch.rand(M, N), torch.rand(N, M)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    problem = problem_from_source(src)
    assert problem.size_constants == {"N": 4096, "M": 2048}
    assert generalization_sizes(problem) == {"N": 2049}
    assert problem.with_sizes(N=2049).size_constants == {"N": 2049, "M": 1024}


def test_upper_case_constants_still_count():
    src = KERNELBENCH_STYLE.replace("batch_size", "BATCH")
    assert generalization_sizes(problem_from_source(src))["BATCH"] == 9


SMALL = (
    KERNELBENCH_STYLE.replace("batch_size = 16", "batch_size = 6")
    .replace("in_features = 4096 * 2", "in_features = 8 * 3")
    .replace("out_features = 64", "out_features = 40")
)

DRAFT = r"""
import json, sys
from tools.draft import draft_candidate
source = open(sys.argv[1]).read()
out = {}
for sizes in ("dynamic", "static"):
    r = draft_candidate(source, device="cpu", sizes=sizes)
    out[sizes] = {"source": r.source, "dynamic": r.dynamic, "fixed": r.fixed_sizes,
                  "notes": r.notes, "precision": r.precision}
json.dump(out, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def drafts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("generalize")
    (tmp / "problem.py").write_text(SMALL)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", DRAFT, str(tmp / "problem.py"), str(tmp / "drafts.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp / "drafts.json").read_text())


def test_dynamic_draft_reads_sizes_and_constructor_numbers(drafts):
    dynamic = drafts["dynamic"]
    assert dynamic["dynamic"], dynamic["notes"]
    source = dynamic["source"]
    assert "self.scaling_factor" in source and "self.eps" in source
    assert "x.shape[0]" in source
    kernels_and_host = source[source.index("@triton.jit") : source.index("class ModelNew")]
    assert "1.5" not in kernels_and_host and "1e-05" not in kernels_and_host
    assert dynamic["precision"] == "tf32x3" and "gemm(" in source
    assert any("read from the inputs at run time" in n for n in dynamic["notes"])
    assert drafts["static"]["fixed"] == ["every size (static draft)"]


def test_dynamic_draft_passes_at_other_sizes_and_static_one_fails(drafts, tmp_path):
    path = tmp_path / "kb_style.py"
    path.write_text(SMALL)
    problem = problem_from_source(SMALL, str(path))
    verifier = Verifier(
        VerifyOptions(trials=1, timeout_s=60, device="cpu", aot_target=None, generalize=True)
    )
    good = verifier.verify(problem, drafts["dynamic"]["source"], "dynamic.py")
    assert good.correct, good.feedback()
    shown = "batch_size=4, in_features=13, out_features=21, scaling_factor=0.75"
    assert any(f"generalisation check passed at {shown}" in n for n in good.evidence.notes)
    assert any("not varied: kernel_size=3" in n for n in good.evidence.notes)
    baked = verifier.verify(problem, drafts["static"]["source"], "static.py")
    assert not baked.correct
    assert f"not at {shown}" in baked.message
    assert any(n.startswith("the candidate depends on ") for n in baked.evidence.notes), (
        baked.evidence.notes
    )
