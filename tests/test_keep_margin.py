"""One rule decides whether a correct attempt replaces the best, in the loop and in the tuner:
faster by more than the timer's noise floor (`agent.evaluation.improves`)."""

from __future__ import annotations

from types import SimpleNamespace

import agent.tuning as tuning
from agent.evaluation import KEEP_MARGIN, improves


def test_a_faster_attempt_must_beat_the_noise_floor_to_become_the_best():
    best = {"speedup": 1.80, "correct": True}
    assert improves({"speedup": 1.80 * (1 + KEEP_MARGIN) + 0.01}, best)
    assert not improves({"speedup": 1.83}, best)  # +1.7%: within the timer's noise
    assert not improves({"speedup": None}, best)
    assert improves({"speedup": 0.5}, {"speedup": None})  # a timed one beats an untimed one
    assert improves({"speedup": None}, None)


def _tune(monkeypatch, speeds: dict[str, float]):
    monkeypatch.setattr(tuning.knobs, "one_at_a_time", lambda code, limit: [(k, k) for k in speeds])
    monkeypatch.setattr(tuning, "problem_from_source", lambda *a: None)
    written: list[dict] = []
    monkeypatch.setattr(tuning, "write_best_kernel", lambda ctx, a: written.append(a))

    def evaluate(ctx, problem, cand, *, index, round_):
        return {
            "index": index,
            "source": cand["source"],
            "code": cand["code"],
            "correct": True,
            "speedup": speeds[cand["code"]],
        }

    monkeypatch.setattr(tuning, "evaluate_candidate", evaluate)
    ctx = SimpleNamespace(
        config=SimpleNamespace(tune_trials=8),
        emit=lambda *a, **k: None,
        rundir=SimpleNamespace(write_attempt=lambda *a: None),
    )
    best = {"index": 0, "code": "orig", "speedup": 1.80, "source": "compiler", "correct": True}
    state = {"problem_source": "", "problem_path": "", "attempts": [best]}
    return best, tuning.tune_attempt(ctx, state, best), written


def test_the_tuner_keeps_the_original_when_variants_win_by_noise(monkeypatch):
    best, out, written = _tune(monkeypatch, {"XBLOCK=64": 1.83, "XBLOCK=256": 1.5})
    assert out["best"] is best and written == []
    assert "none beat the original" in out["notes"][0]


def test_the_tuner_keeps_a_variant_that_is_really_faster(monkeypatch):
    best, out, written = _tune(monkeypatch, {"XBLOCK=64": 1.83, "R0_BLOCK=4096": 2.0})
    assert out["best"]["source"] == "tuner:R0_BLOCK=4096" and written == [out["best"]]
