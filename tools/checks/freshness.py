"""The freshness check, inside a timing job: new values are written *in place* into the buffers
the candidate is timed on and its output is compared with the reference on those values
(computed before the candidate's code was loaded), so a kernel that caches its result by data
pointer fails. The timing itself writes new values before every timed call (`refresher`, through
`tools.checks.timing.Freshness`) and runs this check as one of its timed calls (`fresh_finding`); a
stochastic problem's check runs after the timing (`tools.checks.stochastic.fresh_check`). New values
follow each input's own distribution."""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable
from typing import Any

import torch

from tools.checks.compare import (
    CHUNK_ELEMS,
    cap_refusal,
    fp32_claim_finding,
    fp64_accepted,
    mismatch_report,
    normalise_outputs,
)
from tools.checks.fp64_rule import (
    ALLOWANCE_FACTOR,
    excuse_cap,
    fp32_scale,
    outside_truth,
)
from tools.checks.timing import Call
from tools.job.job_common import _sync

FRESH_SEED_OFFSET = 2000
"""The freshness check's new values come from a generator seeded `seed + FRESH_SEED_OFFSET`."""


def fresh_moments(bufs: list) -> list:
    """Per floating-point input: (mean, std, non-negative) of its values, so that new values
    follow the problem's own distribution. Values of another scale fail honest kernels: on the
    H200, normal(0.25, 1.5) values in place of KernelBench's rand() made 975 of 8.4M elements
    of a correct fp32 GEMM (16_Matmul_with_transposed_A) miss 1e-4 through cancellation."""
    out = []
    for x in bufs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            xf = x.float() if x.element_size() < 4 else x
            out.append(
                (float(xf.mean()), float(xf.std()) if x.numel() > 1 else 1.0, bool(x.min() >= 0))
            )
        else:
            out.append(None)
    return out


def fill_fresh(bufs: list, seed: int, moments: list | None = None) -> None:
    """Write new values into the floating-point tensors of `bufs`, in place: normal with each
    input's own mean and spread (`fresh_moments`; folded to non-negative for inputs that were),
    or normal(0.25, 1.5) without moments. The same seed and the same buffers give the same
    values: the job writes them once to compute the reference, and again after the timing,
    without keeping them in between."""
    generators: dict[torch.device, torch.Generator] = {}
    for i, x in enumerate(bufs):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if x.device not in generators:
                generators[x.device] = torch.Generator(device=x.device).manual_seed(seed)
            m = moments[i] if moments is not None and i < len(moments) else None
            if m is None:
                x.normal_(0.25, 1.5, generator=generators[x.device])
                continue
            mean, std, non_negative = m
            x.normal_(mean, max(std, 1e-6), generator=generators[x.device])
            if non_negative:
                x.abs_()


def refresher(moments: list) -> Callable[[list], None]:
    """What the timing writes into a call's inputs before every timed call: new values of each
    floating-point input's own distribution (`fill_fresh`), from a seed drawn with `secrets`
    each time, so no two timed calls see the same values and the next ones cannot be computed
    ahead from a known seed. Integer and boolean inputs (indices, masks) keep their values."""

    def refresh(bufs: list) -> None:
        fill_fresh(bufs, secrets.randbits(62), moments)

    return refresh


def reference_on_fresh(
    model: torch.nn.Module,
    inputs: list,
    originals: list,
    fill: Callable[[list], None],
    fp64_into: list | None = None,
    allowance_into: list | None = None,
    seed: int = 0,
    tolerance: tuple[float, float] | None = None,
    caps_into: list | None = None,
) -> list:
    """The model's outputs on new values written by `fill`, computed in `inputs`' own buffers (no
    second input set on the device); the floating-point inputs then get their values back from
    `originals` (host copies), so everything timed afterwards sees the original inputs.

    `fp64_into` (a list): the same outputs computed in float64 (a copy of the model, the inputs
    promoted) are appended to it, for `check_freshness`'s fp64 rule; nothing is appended where
    the model fails in float64 or forces its own dtype. `allowance_into` (a list, with
    `fp64_into`): the fp64 rule's allowance on those values (`fp32_error_allowance`, its draws
    seeded from `seed`), appended where it could be made; `caps_into` (a list, with
    `allowance_into` and `tolerance`, the (atol, rtol) the check compares every output at):
    the rule's cap per output (`tools.checks.fp64_rule.excuse_cap`), appended beside it."""
    fill(inputs)
    if fp64_into is not None:
        fp64_into.extend(fp64_outputs(model, inputs))
    with torch.no_grad():
        out = normalise_outputs(model(*inputs))
    storages = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}
    # An output in an input's memory (a model returning its input, or a view of it) would
    # change with the restore below, so it is copied first.
    expected = [
        o.clone()
        if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
        else o
        for o in out
    ]
    del out
    if allowance_into is not None and fp64_into:

        def again() -> list:
            fill(inputs)  # the same values again (`fill` is seeded); the draws perturb them
            return inputs

        made: dict = {}
        tolerances = [tolerance] * len(expected) if tolerance is not None else None
        allowance = fp32_error_allowance(
            model, again, expected, fp64_into, seed=seed, record=made, tolerances=tolerances
        )
        allowance_into.extend(allowance)
        if caps_into is not None and allowance and "outside" in made:
            caps_into.extend(excuse_cap(n) for n in made["outside"])
    for x, original in zip(inputs, originals, strict=True):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x.copy_(original)
    _sync()
    return expected


def fp64_outputs(model: torch.nn.Module, inputs: list) -> list:
    """The model's outputs in float64 (a deep copy of it, floating-point inputs promoted), or []
    where that fails or an output does not come out as float64 (the model forces a dtype)."""
    import copy

    try:
        promoted = [
            x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs
        ]
        with torch.no_grad():
            out = normalise_outputs(copy.deepcopy(model).double()(*promoted))
        _sync()
    except Exception:  # noqa: BLE001 - a problem that cannot run in fp64: the rule does not apply
        return []
    if any(not isinstance(o, torch.Tensor) or o.dtype != torch.float64 for o in out):
        return []
    return list(out)


FP32_DRAWS = 8
"""Draws of PyTorch's fp32 error behind the fp64 rule's allowance (`fp32_error_allowance`),
besides the trial's own: each costs one fp32 and one fp64 run of the model, made only for a
comparison the one-draw rule leaves failing. Measured on the CPU
(`benchmarks/fp64_draws_calibration.py`, output in `benchmarks/results/fp64_draws.md`)."""


ALLOWANCE_BUDGET_S = 60.0
"""Seconds the draws of one allowance may take (a trial's, in the judge or the timing job). Fewer
draws only make the allowance smaller, so stopping early is never less strict: it bounds what a
wrong kernel on a large problem (fp64 convolutions run at a fraction of the fp32 rate) costs the
judge, whose own time limit must also cover the candidate's runs."""


def perturb_one_ulp(x: torch.Tensor, generator: torch.Generator) -> None:
    """Move each finite, non-zero element of a floating-point tensor one ulp up or down at
    random, in place (zeros, infinities and NaNs stay: a zero turned denormal could change what
    the model does with it). Chunked, so it holds at most a few small temporaries."""
    if not x.is_floating_point() or x.numel() == 0:
        return
    flat = x.view(-1) if x.is_contiguous() else None
    if flat is None:  # a view the problem made: perturbed through a copy
        y = x.contiguous()
        perturb_one_ulp(y, generator)
        x.copy_(y)
        return
    inf = torch.tensor(float("inf"), dtype=x.dtype, device=x.device)
    for start in range(0, flat.numel(), CHUNK_ELEMS):
        c = flat[start : start + CHUNK_ELEMS]
        up = torch.rand(c.shape, generator=generator, device=c.device) < 0.5
        moved = torch.where(up, torch.nextafter(c, inf), torch.nextafter(c, -inf))
        keep = (c == 0) | ~torch.isfinite(c)
        c.copy_(torch.where(keep, c, moved))


def _perturbed_draw(model32, model64, weights: list, inputs: list, seed: int) -> tuple:
    """One draw of `fp32_error_allowance`: `inputs` and the models' floating-point `weights`
    ((fp32 tensor, fp64 tensor, original values)) moved an ulp (`perturb_one_ulp`, generators
    seeded `seed`), then (fp32 outputs, fp64 outputs of the same moved values)."""
    generators: dict[torch.device, torch.Generator] = {}

    def generator(device: torch.device) -> torch.Generator:
        if device not in generators:
            generators[device] = torch.Generator(device=device).manual_seed(seed)
        return generators[device]

    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            perturb_one_ulp(x, generator(x.device))
    with torch.no_grad():
        for w32, w64, values in weights:
            w32.copy_(values)
            perturb_one_ulp(w32, generator(w32.device))
            w64.copy_(w32)
        out32 = normalise_outputs(model32(*inputs))
        promoted = [
            x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs
        ]
        del inputs
        out64 = normalise_outputs(model64(*promoted))
        del promoted
    return out32, out64


def _outside(o32: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> int:
    """Elements of one draw's fp32 output outside the tolerance of the trial's fp32 reference
    (NaN compares False: a draw that went NaN raises no cap)."""
    ed = e.to(o32.device).double()
    return int(((o32.double() - ed).abs_() > ed.abs().mul_(rtol).add_(atol)).sum())


def _fold_draw(a: torch.Tensor, c: torch.Tensor, o32: Any, o64: Any, r64: torch.Tensor) -> bool:
    """One draw into one output's D (`a`, PyTorch's largest fp32 error) and C (`c`, the largest
    move of the exact result), in place; False where the draw's outputs do not fit."""
    if (
        not isinstance(o32, torch.Tensor)
        or not isinstance(o64, torch.Tensor)
        or o32.dtype != torch.float32
        or o64.dtype != torch.float64
        or o32.shape != a.shape
        or o64.shape != a.shape
    ):
        return False
    # A draw that overflowed or went NaN says nothing about rounding: it allows nothing.
    err = (o32.double() - o64).abs_().float().nan_to_num_(0.0, 0.0, 0.0)
    torch.fmax(a, err.to(a.device), out=a)
    del err
    moved = (o64 - r64.to(o64.device, torch.float64)).abs_().float().nan_to_num_(0.0, 0.0, 0.0)
    torch.fmax(c, moved.to(c.device), out=c)
    return True


@dataclasses.dataclass
class _Draws:
    """What `fp32_error_allowance`'s draws gather, per output: D (`allowance`, PyTorch's largest
    fp32 error so far, the trial's own draw to start), C (`spread`, the largest move of the
    exact result), and with tolerances the most elements a draw had outside the tolerance of
    the trial's fp32 reference (`outside`) and of its own fp64 value (`truth`, the trial's own
    reference included)."""

    allowance: list
    spread: list
    outside: list
    truth: list


def _start_draws(
    allowance: list,
    expected: list,
    reference64: list,
    tolerances: list[tuple[float, float]] | None,
) -> _Draws:
    """The draws' state before the first perturbed draw: D from the trial's own draw, C zero,
    no element outside yet but where the trial's fp32 reference misses its fp64 value."""
    # The cap counts against the truth too (issue 35, session 17): the trial's own fp32
    # reference outside the tolerance of its fp64 value is where an exact kernel misses.
    truth = [
        outside_truth(e, r, *tolerances[j]) if tolerances and j < len(tolerances) else 0
        for j, (e, r) in enumerate(zip(expected, reference64, strict=True))
    ]
    spread = [torch.zeros_like(a) for a in allowance]
    return _Draws(allowance, spread, [0] * len(allowance), truth)


def _draw_models(model: torch.nn.Module) -> tuple:
    """(fp32 copy, fp64 copy, the copies' floating-point weights as (fp32 tensor, fp64 tensor,
    original values)) for the draws."""
    import copy

    # Copies: a forward that updates the model's state (running statistics) leaves the
    # judge's own model as the candidate's side expects it.
    model32, model64 = copy.deepcopy(model), copy.deepcopy(model).double()
    # The model's own floating-point parameters and buffers move an ulp too, each draw from
    # their values (issue 33: in a selective scan, A's exponentials of cumulative sums carry
    # most of PyTorch's rounding error; draws that move only the inputs leave it out).
    weights = [
        (w32, w64, w32.detach().clone())
        for w32, w64 in zip(
            [*model32.parameters(), *model32.buffers()],
            [*model64.parameters(), *model64.buffers()],
            strict=True,
        )
        if w32.is_floating_point() and w64.is_floating_point()
    ]
    return model32, model64, weights


def _fold_draws(
    state: _Draws,
    models: tuple,
    make_inputs: Callable[[], list],
    expected: list,
    reference64: list,
    tolerances: list[tuple[float, float]] | None,
    *,
    seed: int,
    draws: int,
    budget_s: float | None,
) -> int | None:
    """Up to `draws` perturbed draws (`_perturbed_draw`) folded into `state`, none started once
    the ones made, at their average time, would take the next past `budget_s`: how many were
    made, or None where a draw's outputs do not fit."""
    model32, model64, weights = models
    start, made = time.monotonic(), 0
    for k in range(draws):
        spent = time.monotonic() - start
        if k and budget_s is not None and spent + spent / k > budget_s:
            break
        out32, out64 = _perturbed_draw(model32, model64, weights, make_inputs(), seed * 1000 + k)
        _sync()
        if len(out32) != len(state.allowance) or len(out64) != len(state.allowance):
            return None
        for j, (a, o32, o64) in enumerate(zip(state.allowance, out32, out64, strict=True)):
            if not _fold_draw(a, state.spread[j], o32, o64, reference64[j]):
                return None
            if tolerances is not None and j < len(tolerances):
                outside = _outside(o32, expected[j], *tolerances[j])
                state.outside[j] = max(state.outside[j], outside)
                state.truth[j] = max(state.truth[j], outside_truth(o32, o64, *tolerances[j]))
        del out32, out64
        made += 1
    return made


def _record_draws(
    record: dict, made: int, state: _Draws, tolerances: list[tuple[float, float]] | None
) -> None:
    """`fp32_error_allowance`'s `record`: the draws made, the counts outside (with
    `tolerances`), and C per output."""
    record["draws"] = made
    if tolerances is not None:
        record["outside"] = [max(o, t) for o, t in zip(state.outside, state.truth, strict=True)]
        record["outside_reference"], record["outside_truth"] = state.outside, state.truth
    record["conditioning"] = state.spread  # not changed after: fp32_scale writes into D


def fp32_error_allowance(
    model: torch.nn.Module,
    make_inputs: Callable[[], list],
    expected: list,
    reference64: list,
    *,
    seed: int,
    draws: int = FP32_DRAWS,
    factor: float = ALLOWANCE_FACTOR,
    budget_s: float | None = ALLOWANCE_BUDGET_S,
    record: dict | None = None,
    tolerances: list[tuple[float, float]] | None = None,
) -> list:
    """The fp64 rule's allowance per output element: `factor` times the fp32 error scale there
    (`tools.checks.fp64_rule.fp32_scale`: max(D, ORDER_FACTOR * C)). D is PyTorch's largest fp32 error
    at the element over `draws` + 1 draws: the trial's
    own (|expected - reference64|) and `draws` more, each on the trial's inputs with every
    element moved an fp32 ulp (`perturb_one_ulp`), the model's floating-point parameters and
    buffers too, as |fp32 forward - fp64 forward| of those same inputs and weights. An ulp moves the exact values by next to nothing (the fp64 run of the same
    inputs takes it out), but it changes the low bits of every product and partial sum, so
    PyTorch's rounding errors come out as a new draw: where one draw happened to be nearly
    exact, the others are not. C is the element's conditioning: the largest |fp64 forward of a
    draw's moved values - `reference64`|, what an ulp on every input moves the exact result by
    (an fp32 order of any kind rounds each term at least once). Per output, float32 (rounded to nearest from float64: 2^-24 of
    the allowance, far below the rule's slack), on the outputs' device; [] where a run fails,
    an output is not an fp32 tensor, or shapes disagree (the rule then keeps its one draw).

    `make_inputs()` returns the trial's inputs afresh each call (the same values; the draws
    perturb them in place). No draw starts once the ones made, at their average time, would
    take the next past `budget_s`; `record["draws"]` (where given) gets the number made.
    `tolerances` (per output, (atol, rtol)): `record["outside"]` gets, per output, the most
    elements any one draw's fp32 output had outside that tolerance of `expected` (PyTorch as a
    candidate against itself) or outside that tolerance of its own fp64 value (the trial's own
    reference included: `tools.checks.fp64_rule.outside_truth`), the larger: what the fp64 rule's cap,
    `tools.checks.fp64_rule.excuse_cap`, is made from; the two counts apart in
    `record["outside_reference"]` and `record["outside_truth"]`; `record["conditioning"]` gets
    C per output.

    The steps: D from the trial's own draw, the models the draws run (`_draw_models`), the
    state they fold into (`_start_draws`), the draws (`_fold_draws`), the record
    (`_record_draws`), then the allowance from D and C (`fp32_scale`)."""
    if not expected or len(reference64) != len(expected):
        return []
    try:
        allowance = [
            (e.double() - r.to(device=e.device, dtype=torch.float64)).abs_().float()
            for e, r in zip(expected, reference64, strict=True)
        ]
        models = _draw_models(model)
        state = _start_draws(allowance, expected, reference64, tolerances)
        made = _fold_draws(
            state, models, make_inputs, expected, reference64, tolerances,
            seed=seed, draws=draws, budget_s=budget_s,
        )  # fmt: skip
        if made is None:
            return []
        if record is not None:
            _record_draws(record, made, state, tolerances)
        for a, c in zip(allowance, state.spread, strict=True):
            fp32_scale(a, c).mul_(factor)
        return allowance
    except Exception:  # noqa: BLE001 - out of memory included: the rule keeps its one draw
        return []


def host_originals(host: list, device_inputs: list) -> list:
    """What `reference_on_fresh` restores the floating-point inputs from: the tensors
    `get_inputs()` returned when they were on the host, a host copy of those it returned on the
    device already (moving them did not copy them)."""
    return [
        h.detach().to("cpu", copy=True)
        if h is d and isinstance(h, torch.Tensor) and h.is_floating_point()
        else h
        for h, d in zip(host, device_inputs, strict=True)
    ]


def has_floating(inputs: list) -> bool:
    """Whether any input is a floating-point tensor (new values can be written into it)."""
    return any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in inputs)


def check_freshness(
    call: Call,
    bufs: list,
    fresh: list | Callable[[list], None],
    expected: list,
    atol: float,
    rtol: float,
    *,
    chunk_elems: int = CHUNK_ELEMS,
    expected64: list | None = None,
    allowance64: list | None = None,
    excuse_caps: list | None = None,
) -> dict[str, Any]:
    """Write new values into the very buffers the candidate was timed on and check its output.

    A result cached by data pointer (or any other memoisation of the inputs' identity) is now
    stale and fails this. `fresh` writes the new values: a function filling `bufs` in place (the
    job's, so no second input set is alive), or a list of values copied in. `expected` is the
    reference on those values; outputs are compared `chunk_elems` elements at a time, on their
    own device (`tools.checks.compare.mismatch_report`). `expected64`: the reference on those values in
    float64 (`reference_on_fresh(fp64_into=...)`), for a candidate the judge accepted through
    its fp64 rule: an fp32 element outside the tolerance is then still correct where it is no
    farther from the fp64 value than the fp32 reference is, the judge's own rule
    (`tools.checks.fp64_rule.no_farther_from_fp64`), with `allowance64` (`reference_on_fresh(
    allowance_into=...)`) as the judge's allowance over several draws, and `excuse_caps` (per
    output, `tools.checks.fp64_rule.excuse_cap`) as its cap, where the caller made them."""
    if not has_floating(bufs):
        return {"checked": False, "ok": True, "message": "no floating-point inputs to rewrite"}
    if callable(fresh):
        fresh(bufs)
    else:
        for buf, val in zip(bufs, fresh, strict=True):
            if isinstance(buf, torch.Tensor) and buf.is_floating_point():
                buf.copy_(val)
    _sync()
    got = call(bufs)
    _sync()
    return fresh_finding(
        got,
        expected,
        atol,
        rtol,
        chunk_elems=chunk_elems,
        expected64=expected64,
        allowance64=allowance64,
        excuse_caps=excuse_caps,
    )


def fresh_finding(
    outputs: Any,
    expected: list,
    atol: float,
    rtol: float,
    *,
    chunk_elems: int = CHUNK_ELEMS,
    expected64: list | None = None,
    allowance64: list | None = None,
    excuse_caps: list | None = None,
    during_timing: bool = False,
) -> dict[str, Any]:
    """The freshness check's finding on a call's `outputs` (made on the new values), against
    `expected`, the reference on them (see `check_freshness` for `expected64`/`allowance64`/
    `excuse_caps`: the judge's fp64 rule, its fp32 claim and its cap, `tools.checks.compare.
    compare_outputs`). `during_timing`: the call was one of the timed ones
    (`tools.checks.timing.Freshness`)."""
    got = normalise_outputs(outputs)
    where = "during the timing" if during_timing else "after the timing"
    if len(got) != len(expected):
        return {
            "checked": True,
            "ok": False,
            "message": f"{len(got)} outputs instead of {len(expected)}",
        }
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if not isinstance(g, torch.Tensor) or g.shape != e.shape:
            return {
                "checked": True,
                "ok": False,
                "message": f"output {i} changed shape on new input values",
            }
        r64 = expected64[i] if expected64 and len(expected64) == len(expected) else None
        if r64 is not None and (e.dtype != torch.float32 or tuple(r64.shape) != tuple(e.shape)):
            r64 = None
        a64 = (
            allowance64[i]
            if r64 is not None and allowance64 and len(allowance64) == len(expected)
            else None
        )
        # hint_full_elems=0: the pattern hint from per-chunk counts, never whole float64 copies
        report = mismatch_report(
            g,
            e,
            atol,
            rtol,
            output_index=i,
            chunk_elems=chunk_elems,
            hint_full_elems=0,
            reference64=r64,
            allowance64=a64,
        )
        if report is not None:
            return {
                "checked": True,
                "ok": False,
                "message": f"output {i}: {report.bad_count} of {e.numel()} elements wrong after "
                f"new values were written into the same input buffers ({where}; a result "
                "cached by the input's address, or a timed call that skipped the work?)",
            }
        if r64 is None or a64 is None:
            continue
        # The rule excused elements here: the judge's fp32 claim and cap hold on these values too.
        n, _ = fp64_accepted(g, e, r64, atol, rtol, chunk_elems=chunk_elems, allowance64=a64)
        if not n:
            continue
        refusal = fp32_claim_finding(
            g, e, r64, a64, output_index=i, excused=n, chunk_elems=chunk_elems
        )
        cap = excuse_caps[i] if excuse_caps and len(excuse_caps) == len(expected) else None
        if refusal is None and isinstance(cap, int):
            refusal = cap_refusal(n, cap, e, a64, atol, rtol, output_index=i)
        if refusal is not None:
            return {
                "checked": True,
                "ok": False,
                "message": f"{refusal} (on new values written into the same input buffers, "
                f"{where})",
            }
    return {"checked": True, "ok": True, "message": "output follows new values in the same buffers"}
