"""A kernel that passes verification and is then caught in its timing job is not correct:
`ProfileResult.verdict` says so, because the loop, bench and dataset decide on it."""

from __future__ import annotations

import os

import pytest

from tools.core.results import Verdict
from tools.orchestrate.profile import profile
from tools.orchestrate.profile_result import ProfileOptions
from tools.sandboxing.sandbox import JobOutcome

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELU = os.path.join(ROOT, "examples", "problems", "relu.py")


def _timing_data(**extra):
    data = {
        "device": "NVIDIA H200",
        "baselines": {"eager_samples": [0.02] * 50},
        "candidate_samples": [[0.01] * 50, [0.01] * 50],
        "fresh": {"checked": True, "ok": True, "message": ""},
        "violations": [],
        "notes": [],
    }
    data.update(extra)
    return data


class _GpuVerifier:
    """Verification says correct; the timing job's outcome is scripted."""

    device = "cuda"

    def __init__(self, outcome: JobOutcome):
        outer = self
        self.outcome = outcome

        class _Sandbox:
            def run(self, fn, *args, **kwargs):
                return outer.outcome

        class _Opts:
            seed = 0
            precision = "fp32"  # the baselines cache's key (tools.orchestrate.profile)

        self.sandbox, self.options = _Sandbox(), _Opts()

    def verify(self, problem, source, path, triton_cache_out=None):
        return Verdict(status="ok", compiled=True, correct=True, message="ok", device="cuda")


def _profile(outcome: JobOutcome):
    return profile(
        RELU,
        "irrelevant",
        verifier=_GpuVerifier(outcome),  # type: ignore[arg-type]
        options=ProfileOptions(use_cache=False),
    )


@pytest.mark.parametrize(
    ("outcome", "status", "words"),
    [
        (JobOutcome(kind="crash", error="worker killed by SIGSEGV"), "crash", "timing job"),
        (JobOutcome(kind="timeout", error="killed after 600 s"), "timeout", "timing job"),
        (
            JobOutcome(kind="ok", value=_timing_data(violations=["replacing time.perf_counter"])),
            "cheat",
            "sandbox rules",
        ),
        (
            JobOutcome(
                kind="ok",
                value=_timing_data(fresh={"ok": False, "message": "output cached by pointer"}),
            ),
            "cheat",
            "not a real kernel result",
        ),
        (
            JobOutcome(kind="ok", value=_timing_data(error="RuntimeError: boom", stage="run")),
            "runtime_error",
            "failed while being timed",
        ),
        (JobOutcome(kind="ok", value="a forged reply"), "crash", "malformed reply"),
        (JobOutcome(kind="ok", value={"device": "x"}), "crash", "malformed reply"),
    ],
)
def test_caught_while_timed_means_not_correct(outcome, status, words):
    r = _profile(outcome)
    assert r.status == "not_verified"
    assert r.verdict is not None and not r.verdict.correct
    assert r.verdict.status == status
    assert words in r.message and r.verdict.message == r.message
    assert r.speedup_eager is None and r.candidate is None


def test_a_clean_timing_keeps_the_verdict():
    r = _profile(JobOutcome(kind="ok", value=_timing_data()))
    assert r.status == "ok" and r.verdict.correct and r.verdict.status == "ok"
    assert r.speedup_eager is not None and r.speedup_eager.value == pytest.approx(2.0)


def test_a_failed_re_verification_becomes_the_verdict():
    from tools.orchestrate.profile import refuted
    from tools.orchestrate.profile_result import ProfileResult

    failed = Verdict(status="mismatch", compiled=True, correct=False, message="scaled x100: wrong")
    r = ProfileResult(
        status="not_verified",
        message="a 40.0x speedup was not believed",
        problem="relu.py",
        kernel="k.py",
        baseline="eager",
        verdict=Verdict(status="ok", compiled=True, correct=True, message="ok"),
        reverified=failed,
    )
    assert refuted(r) is failed
