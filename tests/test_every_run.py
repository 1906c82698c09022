"""Every check on every run (issue 34), and libdevice under the interpreter.

Checks that were armed for one run only were ways through: the race check ran on trial 0's
first run (a kernel racy from its second call passed), any atomic in a launch exempted it (one
dummy `tl.atomic_add` hid a non-atomic accumulation), and the precision check ran on each
trial's first run against whole-output maxima (fp16 on repeated inputs, or on the small elements
only, passed). And the interpreter could not run `libdevice`, so an honest `libdevice.tanh`
kernel was a `compile_error` on the CPU. Each kernel below goes through the real verifier (CPU,
the interpreter); each wrong one was `ok` before this change.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tools.checks.precision import lower_precision, precision_sample
from tools.core.problem import read_problem
from tools.job.interp_libdevice import libdevice_as_tl
from tools.job.interp_races import RaceDetector

# ---------------------------------------------------------------------------------------------
# Problems: small copies of the classes involved (a full reduction, a row softmax, tanh)

MSE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mean((a - b) ** 2)


def get_inputs():
    return [torch.randn(8, 500), torch.randn(8, 500)]


def get_init_inputs():
    return []
"""

SOFTMAX = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(16, 200) * 4.0]


def get_init_inputs():
    return []
"""

TANH = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * torch.erf(x) + torch.log1p(x * x)


def get_inputs():
    return [torch.randn(4, 1000) * 3.0]


def get_init_inputs():
    return []
"""

# ---------------------------------------------------------------------------------------------
# Candidates

_MSE_HEAD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

_CALLS = [0]
"""

RACY_FROM_SECOND_CALL = (
    _MSE_HEAD
    + """

@triton.jit
def _mse(a_ptr, b_ptr, out_ptr, n, inv_n, RACY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(a_ptr + offs, mask=m, other=0.0) - tl.load(b_ptr + offs, mask=m, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    if RACY:  # a plain read-modify-write across programs: right only one program at a time
        tl.store(out_ptr, tl.load(out_ptr) + part)
    else:
        tl.atomic_add(out_ptr, part)


class ModelNew(nn.Module):
    def forward(self, a, b):
        _CALLS[0] += 1
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        n = a.numel()
        _mse[(triton.cdiv(n, 512),)](a, b, out, n, 1.0 / n, RACY=_CALLS[0] > 1, BLOCK=512)
        return out
"""
)

RACY_WITH_DUMMY_ATOMIC = (
    _MSE_HEAD
    + """

@triton.jit
def _mse(a_ptr, b_ptr, out_ptr, dummy_ptr, n, inv_n, BLOCK: tl.constexpr):
    tl.atomic_add(dummy_ptr, 1)  # an atomic nobody synchronises on: it orders nothing
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(a_ptr + offs, mask=m, other=0.0) - tl.load(b_ptr + offs, mask=m, other=0.0)
    part = tl.sum(d * d, axis=0) * inv_n
    tl.store(out_ptr, tl.load(out_ptr) + part)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.zeros((), dtype=a.dtype, device=a.device)
        dummy = torch.zeros((), dtype=torch.int32, device=a.device)
        n = a.numel()
        _mse[(triton.cdiv(n, 512),)](a, b, out, dummy, n, 1.0 / n, BLOCK=512)
        return out
"""
)

SPLIT_REDUCTION_LAST_PROGRAM = (
    _MSE_HEAD
    + """

@triton.jit
def _mse(a_ptr, b_ptr, part_ptr, count_ptr, out_ptr, n, inv_n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(a_ptr + offs, mask=m, other=0.0) - tl.load(b_ptr + offs, mask=m, other=0.0)
    tl.store(part_ptr + pid, tl.sum(d * d, axis=0))
    # The atomic orders the partials: the program that takes the counter last reads them all.
    done = tl.atomic_add(count_ptr, 1)
    if done == nprog - 1:
        p = tl.arange(0, 64)
        parts = tl.load(part_ptr + p, mask=p < nprog, other=0.0)
        tl.store(out_ptr, tl.sum(parts, axis=0) * inv_n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        n = a.numel()
        grid = triton.cdiv(n, 512)
        parts = torch.empty(grid, dtype=torch.float32, device=a.device)
        count = torch.zeros((), dtype=torch.int32, device=a.device)
        out = torch.empty((), dtype=a.dtype, device=a.device)
        _mse[(grid,)](a, b, parts, count, out, n, 1.0 / n, BLOCK=512)
        return out
"""
)

_SOFTMAX = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

_SEEN = {}


@triton.jit
def _softmax(x_ptr, y_ptr, n_cols, SMALL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    if SMALL > 0.0:  # fp16 arithmetic where it hides: under SMALL, inside atol 1e-4
        y = tl.where(y < SMALL, y.to(tl.float16).to(tl.float32), y)
    tl.store(y_ptr + row * n_cols + cols, y, mask=m)
"""

FP16_ON_REPEATS = (
    _SOFTMAX
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        # The second run of a trial repeats the first one's inputs: recognised, and cheapened.
        key = (float(x[0, 0]), float(x[-1, -1]))
        small = 0.15 if key in _SEEN else 0.0
        _SEEN[key] = True
        y = torch.empty_like(x)
        _softmax[(x.shape[0],)](x, y, x.shape[1], SMALL=small, BLOCK=256)
        return y
"""
)

FP16_ON_SMALL_ELEMENTS = (
    _SOFTMAX
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        # Only elements under 0.002: their fp16 error sits far below the large elements' fp32
        # error, so a whole-output maximum cannot see it.
        _softmax[(x.shape[0],)](x, y, x.shape[1], SMALL=0.002, BLOCK=256)
        return y
"""
)

HONEST_SOFTMAX = (
    _SOFTMAX
    + """

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _softmax[(x.shape[0],)](x, y, x.shape[1], SMALL=0.0, BLOCK=256)
        return y
"""
)

LIBDEVICE_TANH = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = libdevice.tanh(x) * tl.extra.cuda.libdevice.erf(x) + libdevice.log1p(libdevice.pow(x, 2.0))
    tl.store(y_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
"""

LIBDEVICE_WITHOUT_EQUIVALENT = LIBDEVICE_TANH.replace("libdevice.tanh(x)", "libdevice.j0(x)")


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    d = tmp_path_factory.mktemp("every_run")
    out = {}
    for name, text in (("mse", MSE), ("softmax", SOFTMAX), ("tanh", TANH)):
        (d / f"{name}.py").write_text(text)
        out[name] = read_problem(str(d / f"{name}.py"))
    return out


@pytest.fixture(scope="module")
def verifier():
    from tools.orchestrate.verify import Verifier, VerifyOptions

    return Verifier(VerifyOptions(trials=2, timeout_s=60, device="cpu"))


# ---------------------------------------------------------------------------------------------
# Through the verifier


@pytest.mark.parametrize(
    "problem, kernel, status, words",
    [
        ("mse", RACY_FROM_SECOND_CALL, "runtime_error", "data race"),
        ("mse", RACY_WITH_DUMMY_ATOMIC, "runtime_error", "data race"),
        ("mse", SPLIT_REDUCTION_LAST_PROGRAM, "ok", ""),
        ("softmax", FP16_ON_REPEATS, "mismatch", "lower precision"),
        ("softmax", FP16_ON_SMALL_ELEMENTS, "mismatch", "lower precision"),
        ("softmax", HONEST_SOFTMAX, "ok", ""),
        ("tanh", LIBDEVICE_TANH, "ok", ""),
        ("tanh", LIBDEVICE_WITHOUT_EQUIVALENT, "compile_error", "libdevice.j0"),
    ],
    ids=[
        "racy_from_second_call",
        "racy_with_dummy_atomic",
        "split_reduction_last_program",
        "fp16_on_repeats",
        "fp16_on_small_elements",
        "honest_softmax",
        "libdevice_tanh",
        "libdevice_without_equivalent",
    ],
)
def test_verdict(verifier, problems, problem, kernel, status, words):
    verdict = verifier.verify(problems[problem], kernel, "k.py")
    assert verdict.status == status, (verdict.status, verdict.message)
    assert words in verdict.message, verdict.message


# ---------------------------------------------------------------------------------------------
# The race detector, launch by launch (no sandbox)


class _H:  # the interpreter's TensorHandle, as far as the detector reads it
    def __init__(self, data):
        self.data = np.asarray(data)


def _run(det: RaceDetector, programs: list[list[tuple]]) -> list[dict]:
    """One launch: each program's events in order: ("load" | "store", addresses), ("atomic",
    addresses) (one that changed memory), ("atomic0", addresses) (one that wrote what was
    there), ("wait",) (a branch on an atomic's result)."""
    det.armed = True
    det.new_launch((len(programs), 1, 1))
    for pid, events in enumerate(programs):
        det.set_program(pid, 0, 0)
        for what, *rest in events:
            if what == "wait":
                det._waited()
                continue
            addrs = rest[0]
            ptrs = _H(np.array(addrs, dtype=np.uint64))
            if what in ("atomic", "atomic0"):
                det._record_atomic(ptrs, None, what == "atomic")
            else:
                into = det._loads if what == "load" else det._stores
                det._record(into, ptrs, _H(np.ones(len(addrs), bool)))
    det.check()
    return det.findings


def test_an_atomic_elsewhere_in_the_launch_excuses_nothing():
    # Each program adds into 500 with a plain load and store, beside an atomic on 900.
    racy = [[("atomic", [900]), ("load", [500]), ("store", [500])] for _ in range(3)]
    assert len(_run(RaceDetector(), racy)) == 1
    # The same accumulation with the atomic after the store only (no acquire in the reader).
    racy = [[("load", [500]), ("store", [500]), ("atomic", [900])] for _ in range(3)]
    assert len(_run(RaceDetector(), racy)) == 1


def test_atomics_order_a_last_program_reduction_and_a_lock():
    # Partials stored, then the counter taken; the last program, seeing the count, reads them.
    parts = [[("store", [100 + 4 * p]), ("atomic", [900])] for p in range(3)]
    parts[-1] += [("wait",), ("load", [100, 104, 108])]
    assert _run(RaceDetector(), parts) == []
    # ... but not when the reading program took a counter the others did not release on.
    parts = [[("store", [100 + 4 * p]), ("atomic", [900])] for p in range(3)]
    parts[-1] = [("store", [108]), ("atomic", [904]), ("wait",), ("load", [100, 104, 108])]
    found = _run(RaceDetector(), parts)
    assert found == [{"launch": 1, "reader": 2, "writer": 0, "addresses": 1}]
    # A spin lock around a read-modify-write: take it (and wait on the swap), release it.
    locked = [
        [("atomic", [64]), ("wait",), ("load", [500]), ("store", [500]), ("atomic", [64])]
    ] * 4
    assert _run(RaceDetector(), locked) == []


def test_atomics_that_order_nothing_excuse_nothing():
    body = [("load", [500]), ("store", [500])]
    # atomic_add(counter, 0) before and after: writes nothing new, so it publishes nothing.
    bracket = [[("atomic0", [64]), ("wait",), *body, ("atomic0", [64])]] * 3
    assert len(_run(RaceDetector(), bracket)) == 1
    # Atomics that change the counter, but nothing waits on their result.
    bracket = [[("atomic", [64]), *body, ("atomic", [64])]] * 3
    assert len(_run(RaceDetector(), bracket)) == 1
    # A wait before the acquiring atomic is no wait on it.
    bracket = [[("wait",), ("atomic", [64]), *body, ("atomic", [64])]] * 3
    assert len(_run(RaceDetector(), bracket)) == 1


def test_a_load_before_another_programs_store_is_a_race_too_and_own_addresses_are_not():
    det = RaceDetector()
    # Every program reads x[i] and writes y[i]; in place too (its own address): no conflict.
    assert (
        _run(det, [[("load", [0, 4]), ("store", [100, 104])], [("load", [8]), ("store", [8])]])
        == []
    )
    # Program 0 reads what program 1 overwrites later (a shift in place).
    found = _run(det, [[("load", [0, 4]), ("store", [0])], [("load", [4]), ("store", [4])]])
    assert found and {found[0]["reader"], found[0]["writer"]} == {0, 1}
    assert found[0]["launch"] == 1  # numbered within the forward


def test_disarmed_records_nothing_and_a_launch_past_the_budget_is_thinned(monkeypatch):
    det = RaceDetector()
    det.new_launch((2, 1, 1))
    det._record(det._loads, _H(np.array([500], np.uint64)), _H(np.ones(1, bool)))
    assert det._loads == []
    import tools.job.interp_races as ic

    monkeypatch.setattr(ic, "MAX_RECORDED", 4096)
    # 64 programs each load and store 256 addresses of their own, and all of them accumulate
    # into the same 256 words: the subset kept still holds some of the shared words.
    programs = [
        [
            ("load", list(range(10_000 + 4096 * p, 10_000 + 4096 * p + 1024, 4))),
            ("store", list(range(10_000 + 4096 * p, 10_000 + 4096 * p + 1024, 4))),
            ("load", list(range(0, 1024, 4))),
            ("store", list(range(0, 1024, 4))),
        ]
        for p in range(64)
    ]
    found = _run(det, programs)
    assert found and det.thinned == 1
    assert det._recorded == 0  # forgotten after the check
    det2 = RaceDetector()
    honest = [programs[p][:2] for p in range(64)]
    assert _run(det2, honest) == [] and det2.thinned == 1


# ---------------------------------------------------------------------------------------------
# libdevice under the interpreter (in this process)


def test_libdevice_equivalents_exist_only_during_a_launch():
    import triton.language.extra.cuda.libdevice as cuda_libdevice
    import triton.language.extra.libdevice as stub

    ld = libdevice_as_tl()
    stub_tanh, cuda_tanh, stub_j0 = stub.tanh, cuda_libdevice.tanh, stub.j0
    globs = {"tanh": stub_tanh, "other": 3}
    restore = ld.patch(globs)
    try:
        assert stub.tanh is not stub_tanh and cuda_libdevice.tanh is not cuda_tanh
        assert globs["tanh"] is stub.tanh  # imported by name: replaced too
        with pytest.raises(NotImplementedError, match="libdevice.j0 has no tl equivalent"):
            stub.j0(1.0)
    finally:
        restore()
    # Restored: what the AOT compile for a CUDA target reads is the real libdevice.
    assert stub.tanh is stub_tanh and cuda_libdevice.tanh is cuda_tanh and stub.j0 is stub_j0
    assert globs == {"tanh": stub_tanh, "other": 3}
    assert {"tanh", "erf", "exp", "log1p", "pow", "expm1"} <= set(ld.functions)


# ---------------------------------------------------------------------------------------------
# Precision, element by element (no sandbox)


def test_small_elements_in_fp16_are_seen_beside_large_ones_and_honest_fp32_is_not():
    torch.manual_seed(0)
    x = torch.randn(64, 300) * 4
    ref32, ref64 = torch.softmax(x, -1), torch.softmax(x.double(), -1)
    gen = torch.Generator().manual_seed(0)
    samples = precision_sample([ref32], [ref64], gen)
    low = torch.where(ref32 < 0.002, ref32.half().float(), ref32)
    # The whole-output maxima the check compared before: 64x PyTorch's largest error covers it.
    err_low = float((low.double() - ref64).abs().max())
    assert err_low < 64 * float((ref32.double() - ref64).abs().max())
    msg = lower_precision([low], samples)
    assert msg and "lower precision" in msg
    honest = (x - x.max(-1, keepdim=True).values).exp()
    honest = honest / honest.sum(-1, keepdim=True)
    assert lower_precision([honest], samples) is None
    assert lower_precision([ref64.float()], samples) is None


def test_a_large_output_is_sampled_and_still_caught():
    torch.manual_seed(1)
    x = torch.randn(300_000)
    ref32, ref64 = torch.tanh(x), torch.tanh(x.double())
    gen = torch.Generator().manual_seed(1)
    (sample,) = precision_sample([ref32], [ref64], gen, sample=4096)
    assert sample.index.numel() == 4096 and sample.index.unique().numel() == 4096
    # fp16 on one element in ten: about 400 of the sampled ones show it.
    low = ref32.clone()
    low[::10] = low[::10].half().float()
    assert lower_precision([low], [sample])
    assert lower_precision([ref64.float()], [sample]) is None


def test_outputs_the_fp64_rule_does_not_keep_are_sampled_within_a_time_budget(monkeypatch):
    import types

    import tools.job.judge as judge
    from tools.job.job_common import make_inputs

    monkeypatch.setattr(judge, "PRECISION_MAX_BYTES", 1024)  # every output counts as large
    mod = types.ModuleType("softmax_problem")
    exec(SOFTMAX, mod.__dict__)
    model = mod.Model()
    fp64 = judge._Fp64Reference(model, mod, "cpu")
    expected = [model(*make_inputs(mod, 1, "cpu"))]
    fp64.new_trial({"seed": 1}, expected)
    assert fp64.get() is None  # too large for the fp64 rule's whole copy ...
    samples = fp64.samples()  # ... yet checked: every element of this one (3,200)
    assert samples and samples[0].index.numel() == expected[0].numel()
    assert lower_precision([expected[0].half().float()], samples)
    assert lower_precision([expected[0]], samples) is None
    assert fp64.sample_runs == 1 and fp64.skipped == ""
    monkeypatch.setattr(judge, "PRECISION_BUDGET_S", 0.0)  # the next run would be past it
    expected = [model(*make_inputs(mod, 2, "cpu"))]
    fp64.new_trial({"seed": 2}, expected)
    samples = fp64.samples()  # ... so a few rows of the batch are run instead (issue 35)
    assert samples and fp64.skipped == ""
    assert lower_precision([expected[0].half().float()], samples)
    monkeypatch.setattr(judge, "_batch", lambda expected: None)  # rows that cannot stand alone
    fp64.new_trial({"seed": 2}, expected)
    assert fp64.samples() is None and "not checked for lower precision" in fp64.skipped


def test_a_denormal_flushed_to_zero_is_fp32_not_lower_precision():
    # A softmax row whose small entries underflow into fp32's denormals: a GPU's fast exp
    # flushes them to zero (an error of up to 2^-126); fp16 would lose far more.
    x = torch.tensor([[0.0] + [-95.0 - k for k in range(40)]])
    ref32, ref64 = torch.softmax(x, -1), torch.softmax(x.double(), -1)
    assert 0 < float(ref32[0, 1]) < torch.finfo(torch.float32).tiny
    samples = precision_sample([ref32], [ref64], torch.Generator())
    assert lower_precision([torch.where(ref32 < 1e-38, 0.0, ref32)], samples) is None
    assert lower_precision([ref32.half().float()], samples) is None  # all 0 or 1 in fp16 too
