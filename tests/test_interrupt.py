"""Ctrl-C (issue 17): an evaluation stopped by KeyboardInterrupt checkpoints the attempts that
had finished, and `--resume` evaluates only the candidates left, under their own numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent.nodes
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.helpers import EX, fenced
from tools.evaluate import no_code_verdict

RELU = str(EX / "problems" / "relu.py")
GOOD = (EX / "kernels" / "relu.py").read_text()


def test_ctrl_c_keeps_finished_attempts_and_resume_does_the_rest(tmp_path, monkeypatch):
    calls: list[int] = []
    interrupt_at = {1}

    def fake_evaluate(ctx, problem, cand, *, index, round_):
        calls.append(index)
        if index in interrupt_at:
            raise KeyboardInterrupt  # as if Ctrl-C arrived while this candidate ran
        verdict = no_code_verdict("scripted")
        return {
            "index": index, "round": round_, "source": cand["source"], "code": cand["code"],
            "status": verdict.status, "correct": False, "speedup": None, "speedups": {},
            "verdict": verdict.to_dict(), "profile": None, "feedback": "", "summary": "scripted",
        }  # fmt: skip

    monkeypatch.setattr(agent.nodes, "evaluate_candidate", fake_evaluate)
    cfg = AgentConfig(
        budget=2, samples_per_round=2, compiler_seed=False, trials=1, aot_target=None,
        runs_dir=str(tmp_path), run_id="r1", backend="replay",
    )  # fmt: skip
    replies = [fenced(GOOD), fenced(GOOD)]
    with pytest.raises(KeyboardInterrupt):
        run(RELU, cfg, backend=ReplayBackend(list(replies)))
    assert sorted(calls) == [0, 1]
    assert Path(tmp_path, "r1", "attempts", "00").is_dir()  # the finished one is on disk

    calls.clear()
    interrupt_at.clear()
    res = run(None, cfg, resume="r1", backend=ReplayBackend(list(replies)))
    assert calls == [1]  # attempt 0 was checkpointed, not redone
    assert [a["index"] for a in res["attempts"]] == [0, 1]
    assert res["budget"]["left"] == 0
