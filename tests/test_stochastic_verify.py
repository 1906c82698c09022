"""A stochastic problem (dropout in training mode) is verified statistically, through the real
verify path: problem check, judge and candidate jobs, Triton kernels in the interpreter.

The problem is KernelBench level2/66 (Linear -> Dropout(0.2) -> softmax) at 16x64 -> 96
(`tests/fixtures/stochastic/`); its kernels draw their dropout masks with `tl.rand` and a seed
from torch's RNG. The honest kernel is `ok` and says it was judged statistically; each wrong or
cheating kernel is rejected. Few trials: a trial is 32 runs of each side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.core.problem import read_problem
from tools.orchestrate.verify import Verifier, VerifyOptions
from tools.orchestrate.verify_options import SCALE_TRIALS

FIXTURES = Path(__file__).parent / "fixtures" / "stochastic"


@pytest.fixture(scope="module")
def problem():
    return read_problem(str(FIXTURES / "problem.py"))


@pytest.fixture(scope="module")
def verifier():
    """Two documented trials (64 candidate runs, plus the unannounced ones); the cheats are
    caught on their first trial."""
    return Verifier(VerifyOptions(trials=2, timeout_s=30, device="cpu"))


def _verify(verifier, problem, name):
    path = FIXTURES / f"dropout_{name}.py"
    return verifier.verify(problem, path.read_text(), str(path))


def test_problem_check_finds_the_dropout_problem_stochastic(verifier, problem):
    ref = verifier.reference(problem)
    assert ref.stochastic
    assert ref.expected == [{"shape": [16, 96], "dtype": "torch.float32"}]


def test_honest_triton_dropout_is_ok_and_says_it_was_judged_statistically(verifier, problem):
    verdict = _verify(verifier, problem, "honest")
    assert verdict.status == "ok", verdict.message
    assert verdict.statistical
    assert "judged statistically" in verdict.message
    assert verdict.trials == 2 + len(SCALE_TRIALS)  # issue 35: the scale trials count
    d = verdict.to_dict()
    assert d["statistical"] is True
    trials = d["evidence"]["statistics"]
    assert len(trials) >= 3  # two documented trials and at least one unannounced one
    documented = [t for t in trials if t["outputs"][0]["runs"] == [32, 32]]
    assert len(documented) == 2 + len(SCALE_TRIALS)
    tests = documented[0]["outputs"][0]["tests"]
    assert {"mean", "variance", "projection_variance_spread[along dim 0]"} <= set(tests)
    assert not any(t["reject"] for t in tests.values())


@pytest.mark.parametrize(
    "name, why",
    [
        ("none", "distinct output"),  # no dropout: every run the same
        ("wrong_p", "differ"),  # p/2: means and variances
        ("unscaled", "differ"),  # no 1/(1-p)
        ("fixed_seed", "distinct output"),  # the same mask every call
        # one mask for every row: its elements' variances are also off (one draw a column), and
        # which of the two tests fires first depends on the draw (a full suite run, session 15)
        ("row_mask", ("along dim 0", "variances differ")),
        ("deterministic", "distinct output"),  # one output per input
    ],
)
def test_wrong_or_cheating_dropout_is_rejected(verifier, problem, name, why):
    verdict = _verify(verifier, problem, name)
    assert verdict.status == "mismatch", (name, verdict.status, verdict.message)
    assert verdict.statistical
    assert any(w in verdict.message for w in (why if isinstance(why, tuple) else (why,))), (
        verdict.message
    )


def test_a_crash_in_the_middle_of_a_trial_is_a_crash(verifier, problem):
    verdict = _verify(verifier, problem, "crash")
    assert verdict.status == "crash", verdict.message
    assert verdict.statistical
