"""Large problems: the judge's checks keep their memory and time bounded by the sample they
take, not by the problem's size (session 16: KernelBench's level1/20_LeakyReLU at its published
size, 6.4 GB a tensor, was `ok` in 40 s at 1e55d4b and `crash` after 245 s at 3cfa102 on an
H200, the host peak 6.7 GB -> 13.1 GB).

The cause found on the CPU: the precision check drew its 65,536 elements an output through a
permutation of the whole output (`torch.randperm(n)`): 8 bytes an element (12.9 GB for the
1.6e9-element output) and about 0.3 us an element of one core each trial, while the
candidate's job waited for the judge's reply past its own time limit. Each test runs in a
fresh interpreter so that its peak resident set (`ru_maxrss`) is its own."""

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
from tools.precision import SAMPLE_ELEMS, precision_sample
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

    from tools.precision import sample_index

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
