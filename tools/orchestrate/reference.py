"""A problem's check, found once and kept: `Reference` (its footprint, its outputs' shapes, the
check job's peaks), cached in memory by the Verifier and on disk (`TRITON_AGENT_CACHE`,
`problems.json`) across processes; and the numerics the reference runs in
(`reference_numerics`, `REFERENCE_NUMERICS`) with a run's error against it in KernelBench's terms
(`allclose_ratio`)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tools.core.problem import Problem


@dataclass(kw_only=True)
class Reference:
    """What checking a problem once found (cached per problem): its contract holds, its
    reference runs and is deterministic (or `stochastic` through torch's RNG), and its
    footprint, which sets every verification's memory limits and GPU admission. No tensors:
    reference outputs live only in judge jobs."""

    estimate: dict[str, Any]
    footprint: dict[str, int]
    """Bytes of one trial's inputs, outputs and the model's parameters."""
    expected: list[dict[str, Any]]
    """Shape and dtype of each reference output."""
    memory: dict[str, float]
    """The check job's peaks (MiB): `host_peak_mb`, `gpu_peak_mb`."""
    timings: dict[str, float]
    stochastic: bool = False
    """`Model.forward` draws from torch's RNG (dropout in training mode, rand_like, ...): its
    verifications are statistical (`tools.checks.stochastic`)."""

    @property
    def footprint_mb(self) -> float:
        f = self.footprint
        return (
            f.get("input_bytes", 0) + f.get("output_bytes", 0) + f.get("param_bytes", 0)
        ) / 2**20


PROBLEM_CACHE_VERSION = 1


def problem_cache_key(problem: Problem, device: str, allow_large: bool) -> str:
    import torch
    import triton

    return "|".join(
        (problem.digest, device, torch.__version__, triton.__version__, str(allow_large))
    )


def _problem_cache_path():
    from tools.core.cache import cache_dir

    return cache_dir() / "problems.json"


def read_problem_cache() -> dict[str, Any]:
    from tools.core.cache import read_json

    data = read_json(_problem_cache_path())
    if not isinstance(data, dict) or data.get("version") != PROBLEM_CACHE_VERSION:
        return {}
    return data.get("problems", {}) if isinstance(data.get("problems"), dict) else {}


def write_problem_cache(key: str, entry: dict[str, Any]) -> None:
    """Merge one problem's check into the cache file."""
    from tools.core.cache import write_json

    problems = read_problem_cache()
    problems[key] = entry
    write_json(_problem_cache_path(), {"version": PROBLEM_CACHE_VERSION, "problems": problems})


# ---------------------------------------------------------------------------------------------
# The numerics the reference runs in (issue 36)

REFERENCE_NUMERICS = ("exact", "pytorch-default")
"""`exact` (the default): the judge's reference, and the timing job's freshness reference, in
full fp32, TF32 off in cuDNN and cuBLAS (`tools.checks.precision.full_fp32`). `pytorch-default`: as
PyTorch runs the model by default on a GPU, which is how KernelBench's judge runs its reference:
cuDNN convolutions (and recurrent layers) in TF32, cuBLAS matmuls in fp32. A TF32 kernel then
passes where the reference itself computes in TF32, and an exact fp32 one may fail where the
TF32 reference is farther from the truth than the tolerance: `ok` under it is a weaker claim
(docs/verification.md, "Reference numerics")."""

PYTORCH_DEFAULT_TF32 = {"cudnn": True, "matmul": False}
"""PyTorch's own defaults (`torch.backends.cudnn.allow_tf32`, `torch.backends.cuda.matmul.
allow_tf32`), set explicitly so the reference does not depend on what the job's process did."""


@contextlib.contextmanager
def reference_numerics(setting: str = "exact") -> Iterator[None]:
    """The TF32 switches of `setting` (`REFERENCE_NUMERICS`) while the block runs; the previous
    ones restored after."""
    if setting not in REFERENCE_NUMERICS:
        raise ValueError(f"unknown reference numerics {setting!r}")
    if setting == "exact":
        from tools.checks.precision import full_fp32

        with full_fp32():
            yield
        return
    import torch

    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = PYTORCH_DEFAULT_TF32["cudnn"]
    torch.backends.cuda.matmul.allow_tf32 = PYTORCH_DEFAULT_TF32["matmul"]
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


ALLCLOSE_CHUNK = 1 << 22
"""Elements `allclose_ratio` takes at once (its memory follows it)."""
ALLCLOSE_CPU_MAX = 1 << 24
"""On the CPU, outputs (all together) up to which `allclose_ratio` measures: a cost on every
run of a verification, about a fifth of the comparison's own there
(`benchmarks/results/allclose_ratio_cost_cpu.md`: 1.6 s for 64 Mi elements); the measurement
matters on a GPU (KernelBench's reference is a GPU's)."""


def allclose_ratio(got: list, expected: list) -> dict[str, float] | None:
    """How far a run's outputs are from the reference in the terms of KernelBench's check,
    `torch.allclose(reference, output, atol=t, rtol=t)`, which holds where every element has
    |reference - output| <= t (1 + |output|): the largest |reference - output| / (1 + |output|)
    over the floating-point outputs (`ratio`: KernelBench accepts at tolerance t exactly when
    ratio <= t; inf for a NaN or Inf anywhere, which its allclose refuses), and the largest
    absolute error (`max_abs`); computed in fp32 (fp64 outputs in fp64), chunk by chunk. None
    where an output is not a tensor, shapes differ, or on the CPU past `ALLCLOSE_CPU_MAX`."""
    import torch

    tensors = [t for t in (*got, *expected) if isinstance(t, torch.Tensor)]
    if len(tensors) != len(got) + len(expected) or len(got) != len(expected):
        return None
    if any(t.device.type == "cpu" for t in tensors):
        if sum(e.numel() for e in expected) > ALLCLOSE_CPU_MAX:
            return None
    ratio, max_abs = 0.0, 0.0
    for g, e in zip(got, expected):
        if tuple(g.shape) != tuple(e.shape):
            return None
        if not (e.is_floating_point() and g.is_floating_point()):
            if not torch.equal(g, e):
                ratio = max_abs = math.inf
            continue
        wide = torch.float64 if torch.float64 in (g.dtype, e.dtype) else torch.float32
        flat_g, flat_e = g.reshape(-1), e.reshape(-1)
        for start in range(0, flat_e.numel(), ALLCLOSE_CHUNK):
            a = flat_g[start : start + ALLCLOSE_CHUNK].to(wide)
            diff = torch.sub(a, flat_e[start : start + ALLCLOSE_CHUNK].to(wide)).abs_()
            worst = float(diff.max())  # NaN where any is: max() of Python would drop it
            if not math.isfinite(worst):  # NaN or Inf anywhere: its allclose refuses
                return {"ratio": math.inf, "max_abs": math.inf}
            max_abs = max(max_abs, worst)
            ratio = max(ratio, float(diff.div_(a.abs().add_(1)).max()))  # a: maybe a view
    return {"ratio": ratio, "max_abs": max_abs}
