"""The problem job: load the problem, check that it meets the contract, measure its footprint. Runs
in a sandbox job of its own (`tools.sandboxing.sandbox`), never in the agent's process: it executes
the problem's code (never a candidate's) and returns plain data for the agent to keep.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from tools.checks.compare import normalise_outputs
from tools.job.job_common import (
    ContractError,
    _device_context,
    _short_tb,
    _sync,
    build_model,
    job_device,
    load_problem,
    make_inputs,
    peak_memory,
    tensor_bytes,
)
from tools.job.size_guard import CPU_MAX_ELEMENTS, CPU_MAX_FLOPS, estimate_work, too_large_message


def problem_job(
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    trial_seed: int,
    check_size: bool = True,
) -> dict[str, Any]:
    """Check the problem once: it loads, meets the contract, runs, is deterministic or draws its
    randomness from torch's RNG only (`stochastic`: judged statistically); and measure
    its footprint (bytes of inputs, outputs and parameters, and this job's peaks), which sets
    the limits and the GPU admission of every verification of it.
    Returns {"error": message} for a problem that breaks the contract."""
    device = job_device()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with _device_context():
        try:
            mod = load_problem(problem_source, problem_path)
        except ContractError as exc:
            return {"error": str(exc)}
        est = estimate_work(mod)
        too_large = _too_large(est) if device == "cpu" and check_size else None
        if too_large:
            return too_large
        try:
            model, _ = build_model(mod, seed, device)
            timings["load"] = time.perf_counter() - t0
            inputs = make_inputs(mod, trial_seed, device)
        except ContractError as exc:
            return {"error": str(exc), "estimate": est}
        footprint = {
            "input_bytes": tensor_bytes(inputs),
            "param_bytes": tensor_bytes(list(model.state_dict().values())),
        }
        try:
            with torch.no_grad():
                out = normalise_outputs(model(*inputs))
                _sync()
        except Exception as exc:
            return {"error": f"Model.forward raised on get_inputs(): {_short_tb(exc)}"}
        nonten = [i for i, o in enumerate(out) if not isinstance(o, torch.Tensor)]
        if nonten:
            return {"error": f"Model.forward output {nonten[0]} is not a tensor"}
        footprint["output_bytes"] = tensor_bytes(out)
        expected = [{"shape": list(o.shape), "dtype": str(o.dtype)} for o in out]
        del inputs
        stochastic, error = _randomness(model, mod, trial_seed, device, seed, out)
        if error:
            return {"error": error}
        del out
        timings["reference"] = time.perf_counter() - t0 - timings["load"]
    return {
        "estimate": est,
        "footprint": footprint,
        "expected": expected,
        "stochastic": stochastic,
        "memory": peak_memory(),
        "timings": timings,
        "torch_version": torch.__version__,
    }


def _too_large(est: dict[str, Any]) -> dict[str, Any] | None:
    """The problem job's reply for a problem too large for the CPU interpreter (by its
    estimated elements moved and FLOPs), else None."""
    moved = (est.get("input_elements") or 0) + (est.get("output_elements") or 0)
    flops = est.get("flops") or 0
    if moved > CPU_MAX_ELEMENTS or flops > CPU_MAX_FLOPS:
        return {"error": too_large_message(moved, flops), "too_large": True, "estimate": est}
    return None


def _randomness(
    model: Any, mod: Any, trial_seed: int, device: str, seed: int, out: list
) -> tuple[bool, str | None]:
    """Whether the reference draws from torch's RNG (stochastic: its outputs `out` change under
    another RNG state), and the error when its randomness is not torch's (the same RNG state
    gives other outputs). Returns (stochastic, error or None)."""
    # Same inputs again (regenerated: the forward may have changed them), another RNG state.
    again = _forward_under_rng(model, mod, trial_seed, device, seed + 7)
    stochastic = not _same_outputs(out, again)
    if stochastic:
        # Dropout (or other draws from torch's RNG) would show. A stochastic problem is
        # judged statistically (tools.checks.stochastic), provided the randomness is torch's: the
        # same RNG state must give the same outputs again.
        repeat = _forward_under_rng(model, mod, trial_seed, device, seed + 7)
        if not _same_outputs(again, repeat):
            return stochastic, (
                "the reference is non-deterministic beyond torch's random number "
                "generator: two forwards on the same inputs under the same RNG state differ "
                "(time, threads, unseeded numpy/random, nondeterministic GPU atomics?). "
                "Randomness from torch's RNG (dropout, rand_like, bernoulli) is judged "
                "statistically; other randomness cannot be judged"
            )
    return stochastic, None


def _forward_under_rng(model, mod, trial_seed: int, device: str, rng_seed: int) -> list:
    """The model's outputs on the trial's inputs (made again) under RNG state `rng_seed`."""
    inputs = make_inputs(mod, trial_seed, device)
    torch.manual_seed(rng_seed)
    with torch.no_grad():
        out = normalise_outputs(model(*inputs))
        _sync()
    return out


def _same_outputs(a: list, b: list) -> bool:
    from tools.checks.compare import allclose

    return len(a) == len(b) and all(
        isinstance(y, torch.Tensor)
        and x.shape == y.shape
        and x.dtype == y.dtype
        and allclose(x, y, 1e-5, 1e-5)
        for x, y in zip(a, b)
    )
