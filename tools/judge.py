"""The judge: the job that holds the reference outputs and compares the candidate's with them.

It runs the problem's own code (never the candidate's) in a sandbox job beside the candidate's
job, on the same device. Trial by trial, as the parent asks, it makes the trial's inputs from
the seed (the same values the candidate's job makes), computes the reference outputs, imports
the candidate's outputs where they lie (`tools.handover`: CUDA IPC or mapped files) and
compares them in chunks (`tools.compare`). Reference outputs never leave this process, and no
output ever passes through the agent's process.

Messages (parent -> judge): `{"trial", "seed", "scale"}` -> `{"expected": [...]}`;
`{"compare": descriptors, "directory"}` -> `{"diff": ...}`; `{"stop"}` ends the job.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch

from tools.compare import Tolerance, compare_outputs
from tools.handover import MAX_OUTPUTS, HandoverError, import_output
from tools.worker import (
    ContractError,
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
)


def judge_job(
    channel: Any,
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    atol: float | None = None,
    rtol: float | None = None,
    preset: str = "default",
) -> dict[str, Any]:
    device = job_device()
    tol = Tolerance(atol=atol, rtol=rtol, preset=preset)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    with _device_context():
        try:
            mod = load_problem(problem_source, problem_path)
            model, _ = build_model(mod, seed, device)
        except ContractError as exc:
            return {"error": str(exc)}
        timings["load"] = time.perf_counter() - t0
        channel.send({"ready": True})
        expected: list = []
        trial = -1
        while True:
            msg = channel.recv()
            if not isinstance(msg, dict) or msg.get("stop"):
                break
            if "trial" in msg:
                previous, expected = expected, []  # the previous reference outputs go first
                collect_if_large(previous)
                del previous
                trial = int(msg["trial"])
                try:
                    inputs = make_inputs(mod, int(msg["seed"]), device, float(msg.get("scale", 1)))
                    with torch.no_grad():
                        expected = normalise_outputs(model(*inputs))
                        _sync()
                    del inputs
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
                channel.send(
                    {
                        "expected": [
                            {"shape": list(e.shape), "dtype": str(e.dtype)}
                            if isinstance(e, torch.Tensor)
                            else {"value": repr(e)}
                            for e in expected
                        ]
                    }
                )
            elif "compare" in msg:
                channel.send({"diff": _compare(msg, expected, tol, trial)})
    timings["total"] = time.perf_counter() - t0
    return {"timings": timings, "memory": peak_memory()}


def _compare(msg: dict, expected: list, tol: Tolerance, trial: int) -> dict[str, Any]:
    descs = msg.get("compare")
    run = str(msg.get("run", "first"))
    if not isinstance(descs, list) or len(descs) > MAX_OUTPUTS:
        return {"kind": "shape", "message": "the candidate's outputs could not be read"}
    if len(descs) != len(expected):
        return {
            "kind": "shape",
            "message": f"returned {len(descs)} output(s), the reference returns {len(expected)}",
        }
    got = []
    try:
        for d in descs:
            got.append(import_output(d, msg.get("directory")))
    except HandoverError as exc:
        return {"kind": "handover", "message": f"the candidate's outputs could not be read: {exc}"}
    try:
        diff = compare_outputs(got, expected, tol, trial=trial, run=run)
        _sync()
    except Exception as exc:  # noqa: BLE001 - a view the harness did not make
        return {
            "kind": "handover",
            "message": f"the candidate's outputs could not be compared: {_short_tb(exc, 1)}",
        }
    finally:
        del got
    out = {"kind": diff.kind, "message": diff.message}
    if diff.report is not None:
        out["report"] = dataclasses.asdict(diff.report)
    return out
