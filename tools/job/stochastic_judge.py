"""The judge of a stochastic problem: the job that holds the reference's statistics and tests the
candidate's runs against them (`tools.checks.stochastic`).

Like `tools.job.judge` (the same messages, the same place in the protocol, the problem's code only),
but a trial is many runs: on `{"trial", "seed", "scale", "runs"}` it makes the trial's inputs,
runs the reference `STOCHASTIC_RUNS` times under RNG states it draws itself (`secrets`: the
candidate knows the trial's seed, so the reference's random stream must not follow from it) and
folds every output into the trial's statistics; each `{"compare", "run", "directory"}` imports
one candidate run's outputs (`tools.job.handover`), checks their count, shapes and dtypes and folds
them in; the trial's last run gets the tests' finding (`{"kind": "ok" | "value", "message",
"statistics"}`), the runs before it `{"kind": "ok", "pending": true}`. Reference outputs never
leave this process.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import torch

from tools.checks.compare import Tolerance
from tools.checks.stochastic import STOCHASTIC_RUNS, StochasticTrial
from tools.job.handover import MAX_OUTPUTS, HandoverError, import_output
from tools.job.job_common import (
    ContractError,
    _clone,
    _device_context,
    _short_tb,
    _sync,
    build_model,
    collect_if_large,
    job_device,
    load_problem,
    make_inputs,
    normalise_outputs,
    out_of_memory,
    peak_memory,
    tensor_bytes,
)
from tools.orchestrate.reference import reference_numerics

CLONE_MAX_BYTES = 256 << 20
"""Each reference run gets a copy of the trial's inputs (a forward may change them in place)
up to this size; larger inputs are made again from the seed instead (no second copy alive)."""


def run_names(runs: int = STOCHASTIC_RUNS) -> list[str]:
    """The runs of one documented trial of a stochastic problem, as the parent sends them: the
    first refills the previous run's buffers (a cache keyed by address always hits with other
    data), the others get fresh copies (`tools.job.worker.candidate_job`)."""
    return ["first", "second"] + [f"run{k}" for k in range(2, runs)]


def judge_job(
    channel: Any,
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    atol: float | None = None,
    rtol: float | None = None,
    preset: str = "default",
    runs: int = STOCHASTIC_RUNS,
    numerics: str = "exact",
) -> dict[str, Any]:
    device = job_device()
    tol = Tolerance(atol=atol, rtol=rtol, preset=preset)
    t0 = time.perf_counter()
    timings: dict[str, float] = {"reference": 0.0, "statistics": 0.0}
    # the reference in full fp32 (tools.checks.precision), or as PyTorch runs it by default
    with _device_context(), reference_numerics(numerics):
        try:
            mod = load_problem(problem_source, problem_path)
            model, _ = build_model(mod, seed, device)
        except ContractError as exc:
            return {"error": str(exc)}
        timings["load"] = time.perf_counter() - t0
        channel.send({"ready": True})
        trial: StochasticTrial | None = None
        pending: list[str] = []
        while True:
            msg = channel.recv()
            if not isinstance(msg, dict) or msg.get("stop"):
                break
            if "trial" in msg:
                trial, pending = None, []
                collect_if_large([])
                t1 = time.perf_counter()
                try:
                    trial = _reference_runs(model, mod, msg, device, runs)
                except ContractError as exc:
                    channel.send({"error": str(exc)})
                    continue
                except Exception as exc:  # noqa: BLE001 - the reference itself failed
                    channel.send(
                        {
                            "error": f"Model.forward raised on get_inputs(): {_short_tb(exc)}",
                            "out_of_memory": out_of_memory(exc),
                        }
                    )
                    continue
                timings["reference"] += time.perf_counter() - t1
                pending = [str(r) for r in (msg.get("runs") or ("first", "second"))]
                channel.send(
                    {
                        "expected": [
                            {"shape": list(shape), "dtype": str(dtype)}
                            for shape, dtype in trial.expected
                        ]
                    }
                )
            elif "compare" in msg:
                t1 = time.perf_counter()
                channel.send({"diff": _compare(msg, trial, pending, tol)})
                timings["statistics"] += time.perf_counter() - t1
    timings["total"] = time.perf_counter() - t0
    return {"timings": timings, "memory": peak_memory()}


def _reference_runs(model, mod, msg: dict, device: str, runs: int) -> StochasticTrial:
    seed, scale = int(msg["seed"]), float(msg.get("scale", 1))
    inputs: list | None = make_inputs(mod, seed, device, scale)
    keep = tensor_bytes(inputs) <= CLONE_MAX_BYTES
    trial: StochasticTrial | None = None
    with torch.no_grad():
        for _ in range(runs):
            if keep:
                args = _clone(inputs)
            else:  # the first run on the inputs made, every later one on inputs made again
                args = inputs if inputs is not None else make_inputs(mod, seed, device, scale)
                inputs = None
            torch.manual_seed(secrets.randbits(62))  # a random stream of the judge's own
            out = normalise_outputs(model(*args))
            _sync()
            del args
            if any(not isinstance(o, torch.Tensor) for o in out):
                raise ContractError("a stochastic Model.forward must return tensors only")
            if trial is None:
                trial = StochasticTrial(out, device)
            trial.add_reference(out)
            del out
    del inputs
    assert trial is not None
    return trial


def _compare(msg: dict, trial: StochasticTrial | None, pending: list[str], tol: Tolerance) -> dict:
    descs = msg.get("compare")
    run = str(msg.get("run", "first"))
    if trial is None or run not in pending:
        return {"kind": "handover", "message": f"run {run!r} was not expected by the judge"}
    if not isinstance(descs, list) or len(descs) > MAX_OUTPUTS:
        return {"kind": "shape", "message": "the candidate's outputs could not be read"}
    try:
        got = [import_output(d, msg.get("directory")) for d in descs]
    except HandoverError as exc:
        return {"kind": "handover", "message": f"the candidate's outputs could not be read: {exc}"}
    try:
        why = trial.check_shapes(got)
        if why:
            return {"kind": "shape", "message": why}
        trial.add_candidate(got)
        _sync()
    except Exception as exc:  # noqa: BLE001 - a view the harness did not make
        return {
            "kind": "handover",
            "message": f"the candidate's outputs could not be compared: {_short_tb(exc, 1)}",
        }
    finally:
        del got
    pending.remove(run)
    if pending:
        return {"kind": "ok", "pending": True}
    finding = trial.finish([tol.for_dtype(dtype) for _, dtype in trial.expected])
    out: dict[str, Any] = {
        "kind": "ok" if finding.ok else "value",
        "message": finding.message,
        "statistics": finding.stats,
    }
    return out
