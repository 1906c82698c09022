"""`resource`: a problem that does not fit gets a verdict with figures, never the generic error
object or a traceback; and the judge's bookkeeping (pure) refuses runs it did not compare."""

from __future__ import annotations

import json
from pathlib import Path

from agent.cli import main
from tools.orchestrate.reference import Reference
from tools.orchestrate.verdict_rules import TrialRun, judge
from tools.orchestrate.verify_options import VerifyOptions
from tools.sandboxing.sandbox import JobOutcome

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "examples" / "kernels" / "relu.py"

BIG_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(3 << 28)]  # 3 GiB of fp32


def get_init_inputs():
    return []
"""


def _ref(**footprint: int) -> Reference:
    return Reference(
        estimate={},
        footprint={"input_bytes": 1 << 30, "output_bytes": 1 << 30, "param_bytes": 0, **footprint},
        expected=[{"shape": [1 << 28], "dtype": "torch.float32"}],
        memory={},
        timings={},
    )


def _done(**value) -> JobOutcome:
    base = {
        "stage": "done",
        "audit": {"triton_launches": 10, "kernels": ["k"]},
        "violations": [],
        "idle_runs": [],
    }
    return JobOutcome(kind="ok", value={**base, **value})


def test_a_problem_that_does_not_fit_is_a_resource_verdict(tmp_path, capsys):
    problem = tmp_path / "big.py"
    problem.write_text(BIG_PROBLEM)
    rc = main(
        [
            "verify",
            str(problem),
            str(KERNEL),
            "--json",
            "--allow-large",
            "--memory-mb",
            "2048",
            "--device",
            "cpu",
        ]
    )
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["status"] == "resource", out
    assert rc == 1 and not out["correct"]
    assert "Traceback" not in out["message"] and "--memory-mb" in out["message"]


def test_judge_reports_resource_with_figures():
    run = TrialRun(
        outcome=_done(),
        expected_trials=1,
        resource_failure="the judge's job was killed at its host memory limit (resident set 9000 MB)",
        limits_mb=8192,
        memory=[{"host_peak_mb": 9000.0, "gpu_peak_mb": 7000.0}],
    )
    v = judge(run, _ref(), VerifyOptions(trials=1))
    assert v.status == "resource" and not v.correct
    assert v.evidence.memory == {
        "host_peak_mb": 9000.0,
        "gpu_peak_mb": 7000.0,
        "host_limit_mb": 8192.0,
    }
    assert v.evidence.footprint["input_bytes"] == 1 << 30
    assert "2048 MB a trial" in v.message


def test_a_candidate_out_of_memory_is_resource_after_the_retry():
    run = TrialRun(
        outcome=_done(
            stage="run",
            error={"kind": "OutOfMemoryError", "message": "CUDA out of memory", "line": 12},
            error_class="runtime_error",
            out_of_memory="CUDA out of memory",
        ),
        expected_trials=1,
        out_of_memory=True,
        resource_failure="the candidate ran out of memory: CUDA out of memory",
    )
    v = judge(run, _ref(), VerifyOptions(trials=1))
    assert v.status == "resource" and "out of memory" in v.message


def test_a_candidate_killed_at_its_host_limit_is_a_crash():
    killed = JobOutcome(
        kind="crash", error="memory limit: resident set 9000 MB > 8192 MB; killed", resource=True
    )
    v = judge(TrialRun(outcome=killed, expected_trials=1), _ref(), VerifyOptions(trials=1))
    assert v.status == "crash" and "memory limit" in v.message


def test_ok_needs_every_run_compared_by_the_judge():
    ok = {"kind": "ok", "message": ""}
    full = TrialRun(
        outcome=_done(),
        expected_trials=2,
        comparisons=[(0, "first", ok), (0, "second", ok), (1, "first", ok), (1, "second", ok)],
    )
    assert judge(full, _ref(), VerifyOptions(trials=2)).status == "ok"
    # The candidate's job ended its protocol early (a forged "done") without any error.
    cut = TrialRun(outcome=_done(), expected_trials=2, comparisons=full.comparisons[:1])
    v = judge(cut, _ref(), VerifyOptions(trials=2))
    assert v.status == "cheat" and not v.correct and "1 of 4 runs" in v.message
    # The same run compared twice does not count twice.
    dup = TrialRun(outcome=_done(), expected_trials=1, comparisons=[(0, "first", ok)] * 2)
    assert judge(dup, _ref(), VerifyOptions(trials=1)).status == "cheat"


def test_a_message_the_harness_does_not_send_is_a_cheat():
    run = TrialRun(outcome=_done(), expected_trials=1, forged="a forged message")
    assert judge(run, _ref(), VerifyOptions(trials=1)).status == "cheat"


def test_unreadable_outputs_are_never_accepted():
    bad = {"kind": "handover", "message": "the candidate's outputs could not be read: forged"}
    run = TrialRun(outcome=_done(), expected_trials=1, comparisons=[(0, "first", bad)])
    v = judge(run, _ref(), VerifyOptions(trials=1))
    assert v.status == "crash" and "could not be read" in v.message
