"""An implausible speedup's re-verification (`tools.orchestrate.profile._maybe_reverify`): the plain
problem keeps the contract's scale trial (x100); the rescaled problems (x100, +3) do not get it
again on top (x100 of x100 is x10,000, an overflow no user's inputs reach)."""

from __future__ import annotations

import dataclasses

from tests.helpers import EX
from tools.checks.roofline import Speedup
from tools.core.problem import read_problem
from tools.orchestrate import profile
from tools.orchestrate.profile_result import ProfileOptions, ProfileResult
from tools.orchestrate.verify_options import SCALE_TRIALS, VerifyOptions


class _Verdict:
    correct = True
    message = "ok"


class _Recorder:
    seen: list = []

    def __init__(self, options, sandbox=None):
        self.options = options

    def verify(self, problem, source, kpath):
        _Recorder.seen.append((problem.name, self.options.scale_trials(), self.options.trials))
        return _Verdict()


def test_rescaled_problems_get_no_second_scale_trial(monkeypatch):
    monkeypatch.setattr(profile, "Verifier", _Recorder)
    _Recorder.seen = []
    prob = read_problem(str(EX / "problems" / "relu.py"))
    r = ProfileResult(status="ok", message="", problem="relu", kernel="k", baseline="best")
    r.speedup_eager = Speedup(value=50.0, low=40.0, high=60.0)
    v = dataclasses.make_dataclass("V", [("options", object), ("sandbox", object)])(
        VerifyOptions(), None
    )
    profile._maybe_reverify(r, prob, "src", "k.py", v, ProfileOptions())
    scales = {
        name.split("[")[-1].rstrip("]") if "[" in name else "plain": s
        for name, s, _ in _Recorder.seen
    }
    assert scales["plain"] == SCALE_TRIALS
    assert scales["scaled x100"] == () and scales["shifted +3"] == ()
    assert {t for _, _, t in _Recorder.seen} == {ProfileOptions().reverify_trials}
