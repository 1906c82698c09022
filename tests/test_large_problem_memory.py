"""Large problems: the judge's checks keep their memory and time bounded by the sample they
take, not by the problem's size (session 16: KernelBench's level1/20_LeakyReLU at its published
size, 6.4 GB a tensor, was `ok` in 40 s at 1e55d4b and `crash` after 245 s at 3cfa102 on an
H200, the host peak 6.7 GB -> 13.1 GB).

The cause found on the CPU: the precision check drew its 65,536 elements an output through a
permutation of the whole output (`torch.randperm(n)`): 8 bytes an element (12.9 GB for the
1.6e9-element output) and about 0.3 us an element of one core each trial, while the
candidate's job waited for the judge's reply past its own time limit. And on the CPU, a large
output's precision sample from rows of the batch made the trial's inputs again at the
comparison, beside the reference and the candidate's outputs: one more copy of the inputs at the
judge's peak (a 256 MiB LeakyReLU: 1,087 MB against 760 MB at 1e55d4b). The memory tests run in
a fresh interpreter so that the peak resident set (`ru_maxrss`) is their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 1 << 20


def _run(code: str, timeout: float = 120) -> dict:
    """Run `code` in a fresh Python (the repository on its path); its last stdout line is JSON."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


_SAMPLE_OF_LARGE_OUTPUT = """
import json, resource, time
import torch
from tools.checks.precision import SAMPLE_ELEMS, precision_sample
n = {n}
# Outputs of n elements that take no memory (one value, broadcast): whatever the sample costs
# shows alone in the peak.
expected = torch.ones(1).expand(n)
reference64 = torch.ones(1, dtype=torch.float64).expand(n)
torch.randint(10, (10,))  # torch's own first-call allocations before the baseline
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
(s,) = precision_sample([expected], [reference64], torch.Generator().manual_seed(1))
seconds = time.perf_counter() - t0
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
print(json.dumps({{"grew": grew, "seconds": seconds, "count": s.index.numel(),
    "distinct": s.index.unique().numel(), "lo": int(s.index.min()), "hi": int(s.index.max()),
    "sample": SAMPLE_ELEMS}}))
"""


def test_precision_sample_memory_does_not_grow_with_the_output():
    """A 2^26-element output (256 MiB in fp32): the sample's indices must not cost a
    permutation of the output (512 MiB of int64 before the fix, about 20 s here)."""
    n = 1 << 26
    got = _run(_SAMPLE_OF_LARGE_OUTPUT.format(n=n))
    assert got["count"] == got["distinct"] == got["sample"]
    assert 0 <= got["lo"] and got["hi"] < n
    # The sample itself: 65,536 elements x 17 neighbours in fp64, a few arrays of them.
    assert got["grew"] < 96 * MB, f"the sample took {got['grew'] / MB:.0f} MB more"


def test_precision_sample_of_kernelbench_size_output_is_quick():
    """KernelBench's LeakyReLU output, 4096 x 393216 elements: the sample in seconds (a
    permutation of it takes 12.9 GB and minutes: this test could not run before the fix)."""
    got = _run(_SAMPLE_OF_LARGE_OUTPUT.format(n=4096 * 393216))
    assert got["count"] == got["distinct"] == got["sample"]
    assert got["hi"] < 4096 * 393216
    assert got["grew"] < 96 * MB
    assert got["seconds"] < 20


def test_sample_index_is_uniform_and_distinct():
    """The draw without a permutation still covers the output evenly (no part left unchecked):
    over 16 draws of 65,536 of 2^22 elements, each eighth of the output holds its share."""
    import torch

    from tools.checks.precision import sample_index

    g = torch.Generator().manual_seed(3)
    n, k = 1 << 22, 1 << 16
    counts = torch.zeros(8)
    for _ in range(16):
        idx = sample_index(n, k, g)
        assert idx.numel() == k and idx.unique().numel() == k
        assert int(idx.min()) >= 0 and int(idx.max()) < n
        counts += torch.bincount(idx // (n // 8), minlength=8).float()
    share = counts / counts.sum()
    assert float((share - 1 / 8).abs().max()) < 0.003  # 10 standard deviations
    # small outputs: every element, or a permutation's prefix
    assert sample_index(10, k, g).tolist() == list(range(10))
    mid = sample_index(3 * k, k, g)
    assert mid.unique().numel() == k and int(mid.max()) < 3 * k


_JUDGE_ON_A_LARGE_OUTPUT = """
import json, os, resource, sys, tempfile
import torch
from tools.job.job_common import load_problem
from tools.job.judge import judge_job

path = sys.argv[1]
source = open(path).read()
directory = sys.argv[2]
mod = load_problem(source, path)
shape = [mod.batch_size, mod.dim]
tensor = mod.batch_size * mod.dim * 4
# the candidate's outputs, written by the test where the candidate's job would write them
descs = [{"kind": "tensor", "shape": shape, "dtype": "float32", "stride": [mod.dim, 1],
          "device": "cpu", "file": "out_0_first_0.bin"}]


class Channel:
    def __init__(self, messages):
        self.messages, self.sent = list(messages), []

    def recv(self):
        return self.messages.pop(0)

    def send(self, msg):
        self.sent.append(msg)


channel = Channel([
    {"trial": 0, "seed": 5, "scale": 1.0, "runs": ["first"]},
    {"compare": descs, "run": "first", "directory": directory},
    {"stop": True},
])
import gc; gc.collect()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
judge_job(channel, source, path, seed=42)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"diff": channel.sent[-1].get("diff"), "copies": (peak - base) / tensor}))
"""

_LEAKY = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 256
dim = {dim}


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
"""


def test_judge_peak_on_a_large_output_is_the_inputs_and_two_outputs(tmp_path):
    """KernelBench's LeakyReLU class at 256 MiB a tensor (2^26 elements), one trial through the
    judge's job: its peak is the trial's inputs and reference outputs (then the reference and
    the candidate's outputs), not one copy more. Before the fix, the precision check's rows
    sample made the trial's inputs again at the comparison, beside both outputs (3 copies)."""
    import torch

    from tools.job.handover import export_outputs
    from tools.job.job_common import load_problem, make_inputs

    problem = tmp_path / "leaky_256mib.py"
    problem.write_text(_LEAKY.format(dim=1 << 18))
    # The candidate's outputs (the reference's own), written here: the judge's process holds
    # only what the judge makes.
    mod = load_problem(problem.read_text(), str(problem))
    (x,) = make_inputs(mod, 5, "cpu")
    export_outputs([torch.nn.functional.leaky_relu_(x, 0.01)], str(tmp_path), "out_0_first")
    del x
    out = subprocess.run(
        [sys.executable, "-c", _JUDGE_ON_A_LARGE_OUTPUT, str(problem), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    diff = got["diff"]
    assert diff["kind"] == "ok", diff
    # the precision check ran (on rows of the batch), so the path under test was taken
    assert "precision_skipped" not in diff, diff
    assert got["copies"] < 2.5, f"the judge's peak grew by {got['copies']:.2f} copies"
    print(f"the judge's peak: {got['copies']:.2f} copies of the input over its start")


def test_the_rows_sample_is_cut_from_the_trials_inputs(monkeypatch):
    """With the trial's inputs at hand (`new_trial(..., inputs)`), the rows sample is taken
    then: the comparison makes no inputs again, and the sample still tells fp16 from fp32."""
    import types

    import torch

    import tools.job.judge as judge
    from tools.checks.precision import lower_precision
    from tools.job.job_common import make_inputs

    monkeypatch.setattr(judge, "PRECISION_MAX_BYTES", 1024)  # every output counts as large
    monkeypatch.setattr(judge, "_room_for", lambda nbytes: nbytes < 16 << 10)  # rows only
    mod = types.ModuleType("problem")
    exec(_LEAKY.format(dim=48).replace("256", "40"), mod.__dict__)
    mod.Model.forward = lambda self, x: torch.tanh(x).cumsum(1)  # each row its own
    model = mod.Model()
    inputs = make_inputs(mod, 7, "cpu")
    with torch.no_grad():
        expected = [model(*inputs)]

    def made_again(*args, **kwargs):
        raise AssertionError("the judge made the trial's inputs again")

    fp64 = judge._Fp64Reference(model, mod, "cpu")
    monkeypatch.setattr(judge, "make_inputs", made_again)
    with torch.no_grad():
        fp64.new_trial({"seed": 7}, expected, inputs)
    del inputs
    samples = fp64.samples()
    assert samples is not None and fp64.skipped == "", fp64.skipped
    assert lower_precision([expected[0]], samples) is None
    assert lower_precision([expected[0].half().float()], samples)
