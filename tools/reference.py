"""A problem's check, found once and kept: `Reference` (its footprint, its outputs' shapes, the
check job's peaks), cached in memory by the Verifier and on disk (`TRITON_AGENT_CACHE`,
`problems.json`) across processes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.problem import Problem


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
    verifications are statistical (`tools.stochastic`)."""

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
    from tools.cache import cache_dir

    return cache_dir() / "problems.json"


def read_problem_cache() -> dict[str, Any]:
    from tools.cache import read_json

    data = read_json(_problem_cache_path())
    if not isinstance(data, dict) or data.get("version") != PROBLEM_CACHE_VERSION:
        return {}
    return data.get("problems", {}) if isinstance(data.get("problems"), dict) else {}


def write_problem_cache(key: str, entry: dict[str, Any]) -> None:
    """Merge one problem's check into the cache file."""
    from tools.cache import write_json

    problems = read_problem_cache()
    problems[key] = entry
    write_json(_problem_cache_path(), {"version": PROBLEM_CACHE_VERSION, "problems": problems})
