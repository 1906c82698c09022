"""Every `--json` result is one line of strict JSON (issue 16): no bare NaN/Infinity, every key a
string, bytes and other objects as strings, whatever the candidate put in the evidence."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from tests.helpers import EX
from tools.core.results import Evidence, MismatchReport, Verdict, strict_json
from tools.job.handover import export_outputs

ROOT = Path(__file__).resolve().parent.parent


def _refuse_constant(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def _strict_loads(line: str):
    return json.loads(line, parse_constant=_refuse_constant)


def _mismatch(**figures: float) -> MismatchReport:
    base = dict(
        output_index=0,
        trial=0,
        shape=[13, 1000],
        dtype="float32",
        atol=1e-4,
        rtol=1e-4,
        max_abs_err=0.0,
        mean_abs_err=0.0,
        max_rel_err=0.0,
        bad_count=1,
        numel=13000,
        first_bad=[{"index": [0, 7], "got": float("inf"), "expected": float("nan")}],
    )
    return MismatchReport(**{**base, **figures})


def test_verdict_with_tuple_keys_and_non_finite_figures_is_strict_json():
    evidence = Evidence(
        mismatch=_mismatch(
            max_abs_err=float("inf"), mean_abs_err=float("nan"), max_rel_err=float("-inf")
        ),
        timings={("runs", 1): 0.5, "import": float("inf")},  # type: ignore[dict-item]
        notes=[b"\xffbytes", object()],  # type: ignore[list-item]
    )
    verdict = Verdict(
        status="mismatch", compiled=True, correct=False, message="m", evidence=evidence
    )
    line = verdict.to_json()
    assert "\n" not in line
    data = _strict_loads(line)
    m = data["evidence"]["mismatch"]
    assert (m["max_abs_err"], m["mean_abs_err"], m["max_rel_err"]) == ("inf", "nan", "-inf")
    assert m["first_bad"][0]["got"] == "inf"
    assert data["evidence"]["timings"] == {"('runs', 1)": 0.5, "import": "inf"}
    assert all(isinstance(n, str) for n in data["evidence"]["notes"])


def test_strict_json_keeps_plain_values_as_they_are():
    obj = {"a": [1, 2.5, None, True, "s"], "b": {"c": -0.0}}
    assert _strict_loads(strict_json(obj)) == obj


def test_non_strided_outputs_are_exported_as_values():
    x = torch.randn(4, 5).relu()
    outs = [x.to_sparse(), x.to_sparse_csr(), torch.empty(3, device="meta"), x]
    with tempfile.TemporaryDirectory() as d:
        descs = export_outputs(outs, d, "t")
    assert [desc["kind"] for desc in descs] == ["value", "value", "value", "tensor"]
    assert "sparse tensor (layout torch.sparse_coo)" in descs[0]["value"]
    assert "sparse tensor (layout torch.sparse_csr)" in descs[1]["value"]
    assert "meta tensor" in descs[2]["value"]


# Every element +inf where ReLU is finite: no finite error at all, so max_abs_err, mean_abs_err
# and max_rel_err are all inf (one inf element among finite ones leaves the maxima finite).
ALL_INF_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _inf_kernel(y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.full([BLOCK_SIZE], float("inf"), tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _inf_kernel[(triton.cdiv(x.numel(), 1024),)](y, x.numel(), BLOCK_SIZE=1024)
        return y
"""


def test_cli_json_with_inf_error_figures_is_strict(tmp_path):
    kernel = tmp_path / "relu_all_inf.py"
    kernel.write_text(ALL_INF_KERNEL)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "verify",
            str(EX / "problems" / "relu.py"),
            str(kernel),
            "--json",
            "--trials",
            "1",
            "--device",
            "cpu",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = proc.stdout.strip().splitlines()[-1]
    data = _strict_loads(line)
    assert data["status"] == "mismatch", proc.stderr[-2000:]
    assert data["evidence"]["mismatch"]["max_abs_err"] == "inf"
    assert "Infinity" not in line and "NaN" not in line
