"""Issue 16's verifier hardening, piece by piece (fast, no sandbox jobs): the interpreter's TF32
rounding and cross-program race check, the fp64 precision check, unannounced trials, the static
rule for third-party kernels, and every malformed reply becoming a strict-JSON verdict. The
adversarial corpus (tests/test_adversarial.py) checks the same through whole verifications."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from tools.core.problem import check_candidate_source
from tools.core.results import STATUSES
from tools.job.interp_checks import _round_tf32
from tools.job.interp_races import RaceDetector
from tools.job.judge import precision_finding
from tools.orchestrate.reference import Reference
from tools.orchestrate.verdict_rules import TrialRun, judge
from tools.orchestrate.verify_options import VerifyOptions, with_unannounced_trials
from tools.sandboxing.sandbox import JobOutcome

# ---------------------------------------------------------------------------------------------
# Interpreter numerics


def test_tf32_rounding_keeps_10_mantissa_bits_rounding_to_nearest():
    x = np.array([1.0, 1.0 + 2**-10, 1.0 + 2**-11, 1.0 + 2**-12, -3.14159265, np.inf, np.nan])
    r = _round_tf32(x.astype(np.float32))
    assert r[0] == 1.0 and r[1] == 1.0 + 2**-10
    assert r[2] == 1.0 + 2**-10  # a tie rounds away from zero (cvt.rna)
    assert r[3] == 1.0  # below half an ulp: down
    assert abs(r[4] - -3.14159265) <= 2**-11 * 4 and r[4] != np.float32(-3.14159265)
    assert np.isinf(r[5]) and np.isnan(r[6])
    bits = r[:5].view(np.uint32)
    assert not np.any(bits & 0x1FFF)  # the 13 low mantissa bits are gone


class _H:  # the interpreter's TensorHandle, as far as the detector reads it
    def __init__(self, data):
        self.data = np.asarray(data)


def _launch(det: RaceDetector, programs: list[tuple[list[int], list[int]]]) -> None:
    """Record one launch: each program's (loaded, stored) addresses."""
    det.new_launch((len(programs), 1, 1))
    for pid, (loads, stores) in enumerate(programs):
        det.set_program(pid, 0, 0)
        det._record(det._loads, _H(np.array(loads, dtype=np.uint64)), _H(np.ones(len(loads), bool)))
        det._record(
            det._stores, _H(np.array(stores, dtype=np.uint64)), _H(np.ones(len(stores), bool))
        )
    det.check()


def test_race_detector_flags_a_load_of_another_programs_store():
    det = RaceDetector()
    det.armed = True
    # Every program reads x[i] and writes y[i]; in place too (its own address): no conflict.
    _launch(det, [([0, 4], [100, 104]), ([8, 12], [108, 112]), ([16], [16])])
    assert det.findings == []
    # Program 1 reads the accumulator program 0 wrote (a non-atomic accumulation).
    _launch(det, [([0, 500], [500]), ([8, 500], [500])])
    # (either order is a race: on a GPU program 0 may also run after program 1's store)
    assert len(det.findings) == 1
    assert {det.findings[0]["reader"], det.findings[0]["writer"]} == {0, 1}


def test_race_detector_skips_when_disarmed():
    """(An atomic in the launch no longer exempts it: tests/test_every_run.py has the rules.)"""
    det = RaceDetector()
    det.armed = False
    _launch(det, [([500], [500]), ([500], [500])])
    assert det.findings == []


# ---------------------------------------------------------------------------------------------
# Lower precision in fp32 problems


def _softmax_case(seed: int = 0):
    torch.manual_seed(seed)
    x = torch.randn(37, 333) * 30
    ref32 = torch.softmax(x, -1)
    ref64 = torch.softmax(x.double(), -1)
    return ref32, ref64


def test_fp16_rounding_within_tolerance_is_flagged_and_fp32_is_not():
    ref32, ref64 = _softmax_case()
    low = torch.where(ref32 < 0.15, ref32.half().float(), ref32)
    assert torch.allclose(low, ref32, atol=1e-4, rtol=1e-4)  # the tolerance cannot see it
    msg = precision_finding([low], [ref32], [ref64])
    assert msg and "lower precision" in msg and "input_precision" in msg
    honest = (ref64.float() + 0.0).contiguous()  # correctly rounded: better than PyTorch's own
    assert precision_finding([honest], [ref32], [ref64]) is None
    # a different but fp32 summation order (a few ulps) is not lower precision
    torch.manual_seed(1)
    x = torch.randn(64, 4096)
    s32, s64 = x.sum(1), x.double().sum(1)
    blocked = x.view(64, 64, 64).sum(2).sum(1)
    assert precision_finding([blocked], [s32], [s64]) is None


def test_tf32_matmul_error_is_flagged():
    torch.manual_seed(0)
    a, b = torch.randn(67, 129), torch.randn(129, 95)
    tf32 = torch.from_numpy(_round_tf32(a.numpy())) @ torch.from_numpy(_round_tf32(b.numpy()))
    assert precision_finding([tf32], [a @ b], [a.double() @ b.double()]) is not None


# ---------------------------------------------------------------------------------------------
# Unannounced trials


def test_unannounced_trials_are_inserted_among_the_plain_ones():
    for _ in range(50):
        trials = [(i, 1.0) for i in range(5)] + [(99, 100.0)]  # one generalisation trial
        out, runs = with_unannounced_trials(trials, 5)
        extra = [i for i, r in enumerate(runs) if r == ["first"]]
        assert 1 <= len(extra) <= 2 and len(out) == len(trials) + len(extra)
        assert out[-1] == (99, 100.0)  # the scaled trials stay last
        assert runs[-2] == ["first"]  # fresh inputs right after the documented calls
        assert all(out[i][1] == 1.0 for i in extra)
        assert sum(len(r) for r in runs) == 2 * len(trials) + len(extra)


def _ref() -> Reference:
    return Reference(
        estimate={},
        footprint={"input_bytes": 4, "output_bytes": 4, "param_bytes": 0},
        expected=[{"shape": [1], "dtype": "torch.float32"}],
        memory={},
        timings={},
    )


def _done(**value) -> JobOutcome:
    base = {"stage": "done", "audit": {"triton_launches": 5, "kernels": ["k"]}, "violations": []}
    return JobOutcome(kind="ok", value={**base, **value})


def test_every_run_of_the_plan_must_reach_the_judge():
    ok = {"kind": "ok", "message": ""}
    runs = [["first", "second"], ["first"], ["first", "second"]]
    comps = [(0, "first", ok), (0, "second", ok), (1, "first", ok), (2, "first", ok)]
    cut = TrialRun(outcome=_done(), expected_trials=2, runs=runs, comparisons=comps)
    v = judge(cut, _ref(), VerifyOptions(trials=2))
    assert v.status == "cheat" and "4 of 5 runs" in v.message
    full = TrialRun(
        outcome=_done(), expected_trials=2, runs=runs, comparisons=comps + [(2, "second", ok)]
    )
    v = judge(full, _ref(), VerifyOptions(trials=2))
    assert v.status == "ok" and v.trials == 2


# ---------------------------------------------------------------------------------------------
# The static rule and third-party kernels

_HEAD = "import torch\nimport torch.nn as nn\nimport triton\n"


def test_a_candidate_without_kernels_passes_only_when_it_imports_another_package():
    plain = _HEAD + "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    assert check_candidate_source(plain).status == "bad_input"
    stdlib = "import math, os\n" + plain
    assert check_candidate_source(stdlib).status == "bad_input"
    liger = "from liger_kernel.ops.rms_norm import LigerRMSNormFunction\n" + plain
    assert check_candidate_source(liger).ok


# ---------------------------------------------------------------------------------------------
# A malformed reply is a verdict, and every verdict is strict JSON

MALFORMED = {
    "audit not a dict": {"stage": "done", "audit": ["x"]},
    "audit unknown key": {"stage": "done", "audit": {"triton_launches": 1, "bogus": 1}},
    "launches a string": {"stage": "done", "audit": {"triton_launches": "many"}},
    "error missing keys": {"stage": "run", "error": {"oops": 1}},
    "violations not a list": {"stage": "done", "violations": 7, "audit": {"triton_launches": 1}},
    "tuple keys in timings": {
        "stage": "done",
        "audit": {"triton_launches": 1},
        "timings": {(1, 2): 3},
    },
    "nan timings": {"stage": "done", "audit": {"triton_launches": 1}, "timings": {"x": math.nan}},
    "resources garbage": {"stage": "done", "audit": {"triton_launches": 1}, "resources": [1, 2]},
    "notes not strings": {"stage": "done", "audit": {"triton_launches": 1}, "notes": [{1: 2}]},
    "value not a dict": None,
    "bytes": b"\x00\xff",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_reply_is_a_verdict_in_strict_json(name):
    value = MALFORMED[name]
    ok = {"kind": "ok", "message": ""}
    diffs = [(0, "first", ok), (0, "second", {"kind": "value", "message": math.inf})]
    run = TrialRun(outcome=JobOutcome(kind="ok", value=value), expected_trials=1, comparisons=diffs)
    v = judge(run, _ref(), VerifyOptions(trials=1))
    assert v.status in STATUSES and not v.correct
    line = v.to_json()
    assert "\n" not in line
    json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def test_odd_comparison_findings_are_verdicts():
    for diff in (None, "text", {"kind": "value", "report": {"bogus": 1}}, {"kind": 3}):
        run = TrialRun(outcome=_done(), expected_trials=1, comparisons=[(0, "first", diff)])
        v = judge(run, _ref(), VerifyOptions(trials=1))
        assert v.status in STATUSES and not v.correct
        json.loads(v.to_json(), parse_constant=lambda c: pytest.fail(c))


# ---------------------------------------------------------------------------------------------
# verify --sanitize (the GPU run itself is in benchmarks/gpu_verifier.sh)


def test_sanitizer_findings_turn_an_ok_verdict_into_a_runtime_error():
    from tools.core.results import Evidence, Verdict
    from tools.orchestrate import sanitize

    memcheck = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at _relu_kernel+0x1d0\n"
        "========= ERROR SUMMARY: 3 errors\n"
    )
    bad = sanitize._parse("memcheck", sanitize.ERROR_EXIT, memcheck)
    assert not bad.ok and bad.errors == 3 and "Invalid __global__ read" in bad.excerpt
    clean = sanitize._parse(
        "racecheck", 0, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    )
    assert clean.ok and clean.errors == 0
    warned = sanitize._parse(
        "racecheck", 0, "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)"
    )
    assert warned.ok
    v = Verdict(status="ok", compiled=True, correct=True, message="fine", evidence=Evidence())
    v = sanitize.apply(v, [clean, bad])
    assert v.status == "runtime_error" and not v.correct and "memcheck" in v.message
    assert any("racecheck: no errors" in n for n in v.evidence.notes)
    json.loads(v.to_json())


def test_sanitize_without_the_binary_is_a_clear_bad_input(monkeypatch):
    from tools.core.errors import BadInputError
    from tools.orchestrate import sanitize

    monkeypatch.setattr(sanitize, "sanitizer_path", lambda: None)
    with pytest.raises(BadInputError, match="compute-sanitizer was not found"):
        sanitize.run_sanitizer("p.py", "source", seed=1)
