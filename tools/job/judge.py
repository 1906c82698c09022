"""The judge: the job that holds the reference outputs and compares the candidate's with them.

It runs the problem's own code (never the candidate's) in a sandbox job beside the candidate's
job, on the same device. Trial by trial, as the parent asks, it makes the trial's inputs from
the seed (the same values the candidate's job makes), computes the reference outputs, imports
the candidate's outputs where they lie (`tools.job.handover`: CUDA IPC or mapped files) and
compares them in chunks (`tools.checks.compare`). Reference outputs never leave this process, and no
output ever passes through the agent's process.

Messages (parent -> judge): `{"trial", "seed", "scale"}` -> `{"expected": [...]}`;
`{"compare": descriptors, "directory"}` -> `{"diff": ...}`; `{"stop"}` ends the job.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import Any

import torch

from tools.checks.compare import Tolerance, compare_outputs
from tools.checks.fp64_rule import excuse_cap
from tools.checks.freshness import fp32_error_allowance, fp64_outputs
from tools.checks.output_bits import low_bits_finding
from tools.checks.precision import (
    PRECISION_FACTOR,
    PrecisionSample,
    gather_flat,
    lower_precision,
    precision_sample,
)
from tools.job.handover import MAX_OUTPUTS, HandoverError, import_output
from tools.job.job_common import (
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
    tensor_bytes,
)
from tools.orchestrate.reference import allclose_ratio, reference_numerics

PRECISION_MAX_BYTES = 256 << 20
"""The fp64 rule holds whole fp64 outputs for trials whose fp32 outputs take at most half this.
The precision check keeps only its sample of them (`tools.checks.precision.SAMPLE_ELEMS` an output),
so it runs at any size: a larger output's fp64 copy lives only while the sample is taken."""
PRECISION_BUDGET_S = 60.0
"""Seconds a verification's judge may spend on fp64 runs made for the precision check alone
(outputs over the fp64 rule's limit: before, those were not checked at all). No such run starts
once the ones made, at their average time, would take the next past it (an fp64 convolution
runs at a fraction of the fp32 rate on a GPU, and the judge's time limit also covers the
candidate's runs); the trials left are then checked on a few rows of the batch where the model
computes each row alone (`_rows_sample`), else not checked, and the verdict says so."""


FP64_SAMPLE_MAX_HOST_BYTES = 4 * PRECISION_MAX_BYTES
"""On the CPU, the extra host memory an fp64 run made for the precision sample alone may take:
a verification's memory is a small multiple of the problem's own tensors (tests/test_large_cpu:
a 1 GiB ReLU stays under 5 GiB a process; the fp64 run of it took the judge to 7.4 GiB)."""


def _room_for(nbytes: int) -> bool:
    """Whether an fp64 run taking `nbytes` more fits: on a GPU, in the device's free memory (with
    a margin); on the CPU, under `FP64_SAMPLE_MAX_HOST_BYTES`."""
    if job_device() == "cuda":
        try:
            free, _total = torch.cuda.mem_get_info()
            return nbytes * 3 // 2 <= free
        except Exception:  # noqa: BLE001
            return False
    return nbytes <= FP64_SAMPLE_MAX_HOST_BYTES


def judge_job(
    channel: Any,
    problem_source: str,
    problem_path: str,
    *,
    seed: int,
    atol: float | None = None,
    rtol: float | None = None,
    preset: str = "default",
    numerics: str = "exact",
) -> dict[str, Any]:
    device = job_device()
    tol = Tolerance(atol=atol, rtol=rtol, preset=preset)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    # the reference in full fp32 (tools.checks.precision), or as PyTorch runs it by default
    with _device_context(), reference_numerics(numerics):
        try:
            mod = load_problem(problem_source, problem_path)
            model, _ = build_model(mod, seed, device)
        except ContractError as exc:
            return {"error": str(exc)}
        timings["load"] = time.perf_counter() - t0
        channel.send({"ready": True})
        expected: list = []
        fp64 = _Fp64Reference(model, mod, device)
        trial = -1
        while True:
            msg = channel.recv()
            if not isinstance(msg, dict) or msg.get("stop"):
                break
            if "trial" in msg:
                previous, expected = expected, []  # the previous reference outputs go first
                fp64.new_trial(None, [])
                collect_if_large(previous)
                del previous
                trial = int(msg["trial"])
                try:
                    inputs = make_inputs(mod, int(msg["seed"]), device, float(msg.get("scale", 1)))
                    with torch.no_grad():
                        expected = normalise_outputs(model(*inputs))
                        _sync()
                    # The rows a large output's precision sample may need are cut from these
                    # inputs now: made again at the comparison, they were one more copy of
                    # the inputs beside the reference and the candidate's outputs.
                    fp64.new_trial(msg, expected, inputs if tol.preset == "default" else None)
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
                # The precision check: every run of every trial, under the default preset. On
                # the first run alone, a kernel that recognised the second run's repeated
                # inputs computed in fp16 there; on the first trial alone, one whose lower
                # precision shows on some inputs only got through now and then (issue 34).
                # The fp64 reference and its sample are made once a trial: a run costs one
                # comparison of the sampled elements.
                check = tol.preset == "default"
                channel.send({"diff": _compare(msg, expected, tol, trial, fp64, check)})
    timings["total"] = time.perf_counter() - t0
    return {"timings": timings, "memory": peak_memory()}


class _Fp64Reference:
    """The current trial's outputs computed in float64 (a copy of the model, inputs promoted),
    made only when asked for (it costs a second run of the model) and at most once a trial; None
    where it does not apply: outputs that are not all fp32 tensors, fp32 outputs over
    `PRECISION_MAX_BYTES / 2`, a model that fails in fp64 or forces its own dtype."""

    def __init__(self, model, mod, device: str) -> None:
        self.model, self.mod, self.device = model, mod, device
        self.msg: dict | None = None
        self.expected: list = []
        self.outputs: list | None = None
        self.done = False
        self.allowance_: list | None = None
        self.allowance_done = False
        self.caps: list[int | None] | None = None
        """The fp64 rule's cap per output (`tools.checks.fp64_rule.excuse_cap`), made with the allowance."""
        self.draws = 0
        """Draws made beside the trial's own for `allowance()` (fewer than `FP32_DRAWS` where
        its time budget ran out)."""
        self.sample_runs, self.sample_runs_s = 0, 0.0
        """fp64 runs made for the precision check alone (`samples()`), and their time."""
        self.skipped = ""
        """Why the precision check did not run on the current trial, where its budget ran out."""

    def new_trial(self, msg: dict | None, expected: list, inputs: list | None = None) -> None:
        """A new trial (`msg`: its seed and scale) and its fp32 reference outputs. With the
        trial's `inputs` (the judge's, still held), the rows sample (`_rows_sample`) of an
        output the whole fp64 run has no room or time for is taken now, from them: at the
        comparison it would make the inputs again beside the reference and the candidate's
        outputs (one more copy of the inputs at the judge's peak). A reference that changed
        its inputs in place gives rows that do not reproduce its outputs: no sample then (the
        verdict says the trial was not checked), never a wrong one."""
        self.msg, self.expected, self.outputs, self.done = msg, expected, None, False
        self.allowance_, self.allowance_done, self.draws = None, False, 0
        self.caps = None
        self.samples_: list[PrecisionSample | None] | None = None
        self.samples_done, self.skipped = False, ""
        self.rows_: list[PrecisionSample | None] | None = None
        self.rows_made = False
        if inputs is not None and self._large() and self._no_whole_run():
            self.rows_made = True
            self.rows_ = self._rows_sample(inputs)

    def _large(self) -> bool:
        """Outputs the fp64 rule does not keep (their sample needs a run of its own)."""
        return self.msg is not None and 2 * tensor_bytes(self.expected) > PRECISION_MAX_BYTES

    def _no_whole_run(self) -> str:
        """Why an fp64 run of the whole batch for the sample cannot be made now (no room, or
        `PRECISION_BUDGET_S` spent), else ""."""
        n, spent = self.sample_runs, self.sample_runs_s
        need = 4 * 2 * tensor_bytes(self.expected)  # fp64 inputs, activations and outputs
        if not _room_for(need):
            return (
                f"an fp64 run of the model needs about {need / 2**30:.1f} GiB more than the "
                "judge has room for (its memory stays a small multiple of the problem's "
                "tensors): not checked for lower precision"
            )
        if n and spent + spent / n > PRECISION_BUDGET_S:
            return (
                f"the precision check's fp64 runs took {spent:.0f} s over {n} trial(s) "
                f"(budget {PRECISION_BUDGET_S:g} s): later trials were not checked for lower "
                "precision"
            )
        return ""

    def samples(self) -> list[PrecisionSample | None] | None:
        """The precision check's sample of the trial's outputs (`tools.checks.precision.
        precision_sample`), at any output size: from `get()`'s fp64 outputs where it holds
        them, else from an fp64 run of the whole batch made for the sample and dropped after
        it, and where that has no room or its time is spent, from an fp64 run of a few rows of
        the batch (`_rows_sample`: a cost that does not grow with the batch). Drawn by this
        process for each trial; None where the fp64 reference does not apply or fails."""
        if not self.samples_done:
            self.samples_done = True
            full = self.get()
            if full is None and self._large():
                full = self._fp64_for_sample()
                if full is None and self.skipped:
                    self.samples_ = self.rows_ if self.rows_made else self._rows_sample()
                    if self.samples_ is not None:
                        self.skipped = ""
                        return self.samples_
            if full is not None:
                generator = torch.Generator().manual_seed(secrets.randbits(63))
                self.samples_ = precision_sample(self.expected, full, generator)
                _sync()
                if self.outputs is None:  # made for the sample alone: its memory goes back
                    del full
                    collect_if_large(self.expected)
                    if torch.cuda.is_available() and torch.cuda.is_initialized():
                        torch.cuda.empty_cache()
            full = None
        return self.samples_

    def _rows_sample(self, inputs: list | None = None) -> list[PrecisionSample | None] | None:
        """The sample from `ROWS_SAMPLED` random rows of the batch (dim 0 of every output and
        of the inputs that share it) run again in fp32 and in fp64, for a model that computes
        each row from its own inputs alone; None where it does not (the judge then runs the
        whole batch in fp64 as before), or where even those rows' fp64 run has no room. The
        rows are cut from `inputs` (the trial's, held by the caller), else from inputs made
        again."""
        assert self.msg is not None
        b = _batch(self.expected)
        if not b or not _room_for(4 * 2 * tensor_bytes(self.expected) * _rows_for(b) // b):
            return None
        t0 = time.perf_counter()
        try:
            if inputs is None:
                inputs = make_inputs(
                    self.mod, int(self.msg["seed"]), self.device, float(self.msg.get("scale", 1))
                )
            out = _rows_sample(self.model, inputs, self.expected, secrets.randbits(63))
        except Exception:  # noqa: BLE001 - inputs or a model that cannot be sliced: no sample
            out = None
        finally:
            inputs = None
            collect_if_large(self.expected)
        if out is not None:
            self.sample_runs += 1
            self.sample_runs_s += time.perf_counter() - t0
        return out

    def _fp64_for_sample(self) -> list | None:
        """An fp64 run for the sample alone (outputs the fp64 rule does not keep), within
        `PRECISION_BUDGET_S`; None where the budget is spent or the run fails."""
        self.skipped = self._no_whole_run()
        if self.skipped:
            return None
        n, spent = self.sample_runs, self.sample_runs_s
        t0 = time.perf_counter()
        assert self.msg is not None
        full = _fp64_reference(
            self.model, self.mod, self.msg, self.device, self.expected, max_bytes=None
        )
        self.sample_runs, self.sample_runs_s = n + 1, spent + time.perf_counter() - t0
        return full

    def allowance(self, tol: Tolerance | None = None) -> list | None:
        """PyTorch's largest fp32 error per element over the trial's inputs and `FP32_DRAWS`
        copies of them an ulp away (`tools.checks.freshness.fp32_error_allowance`), beside `get()`'s
        fp64 outputs; made only when asked for, at most once a trial; None where it does not
        apply or fails. With `tol`, `caps` gets the rule's cap per output from the same draws
        (`tools.checks.fp64_rule.excuse_cap`)."""
        if not self.allowance_done:
            self.allowance_done = True
            reference64 = self.get()
            if reference64 is not None and self.msg is not None:
                msg, mod, device = self.msg, self.mod, self.device
                made: dict = {}
                out = fp32_error_allowance(
                    self.model,
                    lambda: make_inputs(mod, int(msg["seed"]), device, float(msg.get("scale", 1))),
                    self.expected,
                    reference64,
                    seed=int(msg["seed"]),
                    record=made,
                    tolerances=[tol.for_dtype(e.dtype) for e in self.expected] if tol else None,
                )
                self.allowance_ = out or None
                self.draws = int(made.get("draws", 0)) if out else 0
                if out and "outside" in made:
                    self.caps = [excuse_cap(n) for n in made["outside"]]
        return self.allowance_

    def get(self) -> list | None:
        if not self.done:
            self.done = True
            if self.msg is not None:
                self.outputs = _fp64_reference(
                    self.model,
                    self.mod,
                    self.msg,
                    self.device,
                    self.expected,
                    max_bytes=PRECISION_MAX_BYTES,
                )
        return self.outputs


ROWS_SAMPLED = 4
"""Rows of the batch (at most half of it) a large output's precision sample comes from, drawn
anew each trial (`_rows_sample`); the sample's `SAMPLE_ELEMS` elements are drawn among theirs.
An output counts as large from 128 MiB: 4 rows of a batch of 16 to 512 (KernelBench's) take
1/128 to 1/4 of a whole fp64 run."""
ROWS_AGREE = PRECISION_FACTOR / 2
"""How far (in each sampled element's scale of fp32 error) the model's fp32 outputs for the rows
alone may differ from the rows of its whole-batch outputs for those rows to stand for them: a
library may sum in another order for another batch size, while a model that mixes rows (batch
statistics, a reduction over the batch) differs by far more (a share of the value itself, ~1e6
scales), and its rows alone are another function: the sample would then misjudge an honest
kernel. The order alone was measured at up to 8.5 scales (nn.Linear 192 -> 48, 4 rows of 40,
500 draws, one thread or two: MKL picks another kernel for 4 rows), so the bound is half the
precision check's own factor: rows that agree within it leave an honest kernel's error against
their fp64 values under `PRECISION_FACTOR`."""


def _batch(expected: list) -> int | None:
    """The outputs' common first dimension (the batch), where they are fp32 tensors that have
    one of at least 2; else None."""
    sizes = {
        e.shape[0] if isinstance(e, torch.Tensor) and e.dim() and e.dtype == torch.float32 else 0
        for e in expected
    }
    (b,) = sizes if len(sizes) == 1 else (0,)
    return b if b >= 2 else None


def _rows_for(b: int) -> int:
    """How many rows of a batch of `b` `_rows_sample` runs: `ROWS_SAMPLED`, at most half."""
    return max(1, min(b // 2, ROWS_SAMPLED))


def _rows_sample(
    model, inputs: list, expected: list, seed: int
) -> list[PrecisionSample | None] | None:
    """The precision sample of `expected` (whole-batch fp32 outputs) from a random subset of
    its rows: the inputs whose first dimension is the outputs' (all such inputs, else the first
    one alone) cut to those rows and run in fp32 and fp64. The rows stand for the whole only
    where the fp32 run reproduces `expected`'s rows within `ROWS_AGREE` at every sampled
    element; the sample's indices are then the whole outputs' flat indices. None where that
    does not hold or does not apply (outputs of different batch sizes, one row)."""
    b = _batch(expected)
    if b is None:
        return None
    k = _rows_for(b)
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randperm(b, generator=generator)[:k].sort().values
    cut = [
        i
        for i, x in enumerate(inputs)
        if isinstance(x, torch.Tensor) and x.dim() and x.shape[0] == b
    ]
    for which in (cut, cut[:1]) if len(cut) > 1 else (cut,):
        if not which:
            return None
        part = [
            x.index_select(0, rows.to(x.device)) if i in which else x for i, x in enumerate(inputs)
        ]
        try:
            with torch.no_grad():
                out32 = normalise_outputs(model(*part))
            _sync()
        except Exception:  # noqa: BLE001 - the model does not take fewer rows
            continue
        if len(out32) != len(expected) or any(
            not isinstance(o, torch.Tensor) or tuple(o.shape) != (k, *e.shape[1:])
            for o, e in zip(out32, expected)
        ):
            continue
        out64 = fp64_outputs(model, part)
        if len(out64) != len(expected):
            return None
        samples = precision_sample(out32, out64, generator)
        whole: list[PrecisionSample | None] = []
        for s, o, e in zip(samples, out32, expected):
            if s is None:
                whole.append(None)
                continue
            per_row = e[0].numel()
            mine = e.index_select(0, rows.to(e.device))
            apart = (gather_flat(mine, s.index).double() - gather_flat(o, s.index).double()).abs()
            if bool((apart > ROWS_AGREE * s.scale).any()):
                break  # the rows alone are another function
            s.index = rows.to(s.index.device)[s.index // per_row] * per_row + s.index % per_row
            whole.append(s)
        else:
            return whole
    return None


def _fp64_reference(
    model, mod, msg: dict, device: str, expected: list, *, max_bytes: int | None
) -> list | None:
    """The trial's outputs computed in float64 (a copy of the model, inputs promoted), for an
    fp32 problem whose fp64 outputs take at most `max_bytes` (None: any size); None where that
    does not apply or fails."""
    if not expected or any(
        not isinstance(e, torch.Tensor) or e.dtype != torch.float32 for e in expected
    ):
        return None
    if max_bytes is not None and 2 * tensor_bytes(expected) > max_bytes:
        return None
    try:
        inputs = make_inputs(mod, int(msg["seed"]), device, float(msg.get("scale", 1)))
    except Exception:  # noqa: BLE001 - inputs that cannot be made again: no check
        return None
    out = fp64_outputs(model, inputs)  # [] where the model fails in fp64 or forces a dtype
    if len(out) != len(expected) or any(o.shape != e.shape for o, e in zip(out, expected)):
        return None  # the problem forces its own dtype: fp64 says nothing more
    return out


def precision_finding(got: list, expected: list, reference64: list) -> str | None:
    """Whether fp32 outputs were computed in lower precision, element by element against whole
    fp32 and fp64 references (`tools.checks.precision.lower_precision` over every element up to
    `SAMPLE_ELEMS`, a random sample beyond). A message, or None."""
    generator = torch.Generator().manual_seed(secrets.randbits(63))
    return lower_precision(got, precision_sample(expected, reference64, generator))


def _compare(
    msg: dict,
    expected: list,
    tol: Tolerance,
    trial: int,
    fp64: _Fp64Reference | None = None,
    precision_check: bool = False,
) -> dict[str, Any]:
    """One run's outputs against the trial's reference. Where fp32 values fall outside the
    tolerance, they are compared again with the fp64 reference (`fp64`, made then): an element
    no farther from it than PyTorch's own fp32 value is counts as correct
    (`tools.checks.fp64_rule.no_farther_from_fp64`), and the finding says how many were. With
    `precision_check`, outputs that match are also checked for lower-precision arithmetic."""
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
        draws, skipped = 0, ""
        if diff.kind == "value" and fp64 is not None:
            diff, draws = _compare_with_fp64(got, expected, tol, trial, run, fp64, diff)
        if diff.kind == "ok" and precision_check:
            finding, skipped = _precision_findings(got, expected, fp64)
            if finding:
                return {"kind": "value", "message": finding}
        # the error against the reference in KernelBench's allclose terms (issue 36)
        measured = allclose_ratio(got, expected) if diff.kind == "ok" else None
    except Exception as exc:  # noqa: BLE001 - a view the harness did not make
        return {
            "kind": "handover",
            "message": f"the candidate's outputs could not be compared: {_short_tb(exc, 1)}",
        }
    finally:
        del got
    return _diff_record(diff, draws, skipped, measured)


def _compare_with_fp64(
    got: list,
    expected: list,
    tol: Tolerance,
    trial: int,
    run: str,
    fp64: _Fp64Reference,
    diff: Any,
) -> tuple[Any, int]:
    """The comparison again, with the fp64 rule (`fp64`'s outputs, made now), for a run whose
    values fell outside the tolerance: (the finding, the draws beside the trial's own that
    the rule's allowance took). `diff` unchanged where the fp64 reference does not apply."""
    reference64 = fp64.get()
    if reference64 is None:
        return diff, 0
    # PyTorch's error at an element is one draw, so the rule takes its largest over more draws
    # (inputs an ulp away); the same draws give the cancellation condition, the cap on the
    # elements excused and the fp32 claim over the whole output (issue 35), so they are made
    # whenever the rule is asked to excuse anything.
    allowance = fp64.allowance(tol)
    diff = compare_outputs(
        got,
        expected,
        tol,
        trial=trial,
        run=run,
        reference64=reference64,
        allowance64=allowance,
        excuse_caps=fp64.caps if allowance is not None else None,
    )
    _sync()
    return diff, fp64.draws if allowance is not None else 0


def _precision_findings(
    got: list, expected: list, fp64: _Fp64Reference | None
) -> tuple[str | None, str]:
    """Outputs that match, checked for lower precision: computed in it (against the fp64
    sample, where `fp64` makes one), or stored in it (their low mantissa bits, issue 35).
    Returns (the finding or None, why the sample check did not run on this trial or "")."""
    skipped = ""
    if fp64 is not None:
        samples = fp64.samples()
        finding = lower_precision(got, samples, allowance64=fp64.allowance_) if samples else None
        _sync()
        if finding:
            return finding, skipped
        skipped = fp64.skipped
    return low_bits_finding(got, expected), skipped


def _diff_record(diff: Any, draws: int, skipped: str, measured: dict | None) -> dict[str, Any]:
    """One run's comparison as the judge reports it to the parent."""
    out: dict[str, Any] = {"kind": diff.kind, "message": diff.message}
    if diff.report is not None:
        out["report"] = dataclasses.asdict(diff.report)
    if diff.accepted:
        out["fp64_accepted"] = diff.accepted
        out["fp64_accepted_max_ref_err"] = diff.accepted_max_ref_err
    if draws:
        out["fp64_draws"] = draws + 1
    if diff.accepted and diff.excuse_cap is not None:
        out["fp64_cap"] = diff.excuse_cap
    if skipped:
        out["precision_skipped"] = skipped
    if measured is not None:
        out["reference_error"] = measured
    return out
