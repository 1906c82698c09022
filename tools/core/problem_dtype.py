"""The precision a problem runs at (`--precision fp32|bf16|fp16`), with KernelBench's meaning.

KernelBench's evaluation (`eval_kernel_against_ref(precision=...)`, ../shared/kernelbench-eval,
`kernelbench/eval.py`) casts the reference `Model` and the candidate's `ModelNew`
(`.to(dtype=...)`: their floating parameters and buffers), the constructor's tensor arguments
and the forward's tensor inputs to that dtype, and compares at `get_tolerance_for_precision`:
atol = rtol = 1e-4 at fp32, 1e-2 at fp16 and bf16. This module does the same casts in every
job that builds the problem (the judge, the candidate's job, the problem check, the timing job,
the drafter), so the reference, the candidate and the baselines all run at one dtype.

Where it differs from KernelBench, and why:
- only *floating* tensors are cast. KernelBench casts every tensor input (`input.to(dtype)`),
  so an integer input (class targets, indices) becomes bf16 and the problem breaks or changes
  meaning; an integer or bool tensor here stays as `get_inputs()` drew it.
- `fp32`, the default, runs the problem as written (no cast at all): a problem with its own
  fp64 or fp16 tensors keeps them, as every verification did before this option.

How it reaches the jobs: the Verifier sets `PRECISION_ENV` in its sandbox's job environment
(`tools.sandboxing.sandbox.Sandbox.job_env`), as `TA_DEVICE` tells a job its device, so every job that
sandbox starts (the problem check, the judge, the candidate's job, the timing job) runs at the
verifier's precision without a keyword on each; `tools.job.job_common.load_problem` reads it and
marks the loaded module (`set_precision` / `precision_of`), which `build_model` and
`make_inputs` read. Plain data and small functions; no jobs here.
"""

from __future__ import annotations

import types
from typing import Any

PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "fp16")
"""The `--precision` choices, KernelBench's names (`get_torch_dtype_from_string`)."""
DEFAULT_PRECISION = "fp32"

KERNELBENCH_TOLERANCE: dict[str, float] = {"fp32": 1e-4, "bf16": 1e-2, "fp16": 1e-2}
"""KernelBench's atol = rtol per precision (`get_tolerance_for_precision`, after torchbench):
the same as `tools.checks.compare.DEFAULT_TOLERANCES` for outputs of those dtypes."""

PRECISION_ENV = "TA_PRECISION"
"""The job environment's key naming the precision (absent: fp32)."""

_ATTR = "__ta_precision__"
"""The loaded problem module's attribute that holds its precision (a dunder name: the integrity
snapshot counts the module's names, so a candidate that deletes or adds it is seen; changing it
would only cast its own job's inputs to another dtype than the judge's, a dtype mismatch)."""


def torch_dtype(precision: str) -> Any:
    """The torch dtype of `precision`, or None for `fp32` (the problem runs as written)."""
    import torch

    check_precision(precision)
    return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def check_precision(precision: str) -> str:
    from tools.core.errors import BadInputError

    if precision not in PRECISIONS:
        raise BadInputError(
            f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}"
        )
    return precision


def job_precision() -> str:
    """The precision this job runs its problem at (`PRECISION_ENV`; fp32 when unset)."""
    import os

    return check_precision(os.environ.get(PRECISION_ENV) or DEFAULT_PRECISION)


def precision_env(precision: str) -> dict[str, str]:
    """The job environment for `precision` (empty for fp32: jobs run as before)."""
    check_precision(precision)
    return {} if precision == DEFAULT_PRECISION else {PRECISION_ENV: precision}


def cache_suffix(precision: str) -> str:
    """What a cache key of a problem (its check, its baselines, its draft) gets for
    `precision`: nothing for fp32 (the keys written before this option stay valid)."""
    check_precision(precision)
    return "" if precision == DEFAULT_PRECISION else f"@{precision}"


def set_precision(mod: types.ModuleType, precision: str) -> types.ModuleType:
    """Mark a loaded problem module with the precision its jobs run it at."""
    setattr(mod, _ATTR, check_precision(precision))
    return mod


def precision_of(mod: Any) -> str:
    """The precision a loaded problem module runs at (`fp32` when never set)."""
    value = getattr(mod, _ATTR, DEFAULT_PRECISION)
    return value if value in PRECISIONS else DEFAULT_PRECISION


def cast_floating(values: list, dtype: Any) -> list:
    """`values` with every floating-point tensor cast to `dtype` (None: unchanged); integer and
    bool tensors and plain numbers as they are (KernelBench casts every tensor: see above)."""
    import torch

    if dtype is None:
        return values
    return [
        v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values
    ]


def cast_model(model: Any, dtype: Any) -> Any:
    """`model` with its floating parameters and buffers cast to `dtype` (None: unchanged), as
    KernelBench's `model.to(dtype=precision)` does (`nn.Module.to` leaves integer buffers)."""
    if dtype is None:
        return model
    return model.to(dtype=dtype)


def precision_words(precision: str) -> str:
    """How a verdict, a report or a prompt names the precision."""
    if precision == DEFAULT_PRECISION:
        return "fp32 (the problem as written)"
    return (
        f"{precision}: the model's floating parameters and buffers and its floating inputs "
        f"cast to {precision} (KernelBench's meaning), tolerance "
        f"{KERNELBENCH_TOLERANCE[precision]:g}"
    )
