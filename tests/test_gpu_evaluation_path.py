"""The loop's GPU evaluation path (verify through tools.orchestrate.profile, speedups, `slower`, tuner),
exercised on the CPU with the profiler replaced by a stub that returns real ProfileResult
objects. The GPU itself is covered by the recorded device runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.helpers import ROOT
from tools.checks.roofline import Speedup
from tools.core.results import Verdict
from tools.sandboxing.sandbox import Sandbox

RELU = str(ROOT / "examples/problems/relu.py")
GOOD = (ROOT / "examples/kernels/relu.py").read_text()


@pytest.fixture
def fake_gpu(monkeypatch):
    """Pretend the verifier runs on CUDA; time kernels by a scripted speedup per source text."""
    import tools.orchestrate.profile as prof
    from tools.orchestrate.verify import Verifier

    calls = []
    speed = {"value": 0.8, "compile_ratio": 1.25}
    """`value`: the speedup over eager; `compile_ratio`: the one over compile, relative to it."""

    def fake_profile(problem, code, *, verifier, kernel_path, options):
        baseline = options.baseline
        verdict = Verifier.verify(verifier, problem, code, kernel_path)
        calls.append(kernel_path)
        if not verdict.correct:
            return prof.ProfileResult(
                status="not_verified",
                message="",
                problem=problem.path,
                kernel=kernel_path,
                baseline=baseline,
                verdict=verdict,
            )
        s = speed["value"] * (
            2.0 if "BLOCK_SIZE=2048" in code or "BLOCK_SIZE = 2048" in code else 1.0
        )
        c = s * speed["compile_ratio"]
        return prof.ProfileResult(
            status="ok" if s >= 1 else "slower",
            message="",
            problem=problem.path,
            kernel=kernel_path,
            baseline=baseline,
            verdict=verdict,
            speedup_eager=Speedup(value=s, low=s * 0.98, high=s * 1.02),
            speedup_compile=Speedup(value=c, low=c, high=c),
            speedup_best=Speedup(value=min(s, c), low=min(s, c), high=min(s, c)),
        )

    monkeypatch.setattr(prof, "profile", fake_profile)
    import sys

    monkeypatch.setattr(sys.modules["tools.orchestrate.verify"], "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(Verifier, "sandbox_factory", _CPUSandbox)
    return calls, speed


class _CPUSandbox(Sandbox):
    """The "cuda" verifier's sandbox, running its jobs on the CPU."""

    def __init__(self, *, device: str = "cpu", **kw):
        super().__init__(device="cpu", **kw)


def test_slower_kernel_is_kept_tuned_and_reported(fake_gpu, tmp_path, monkeypatch):
    calls, speed = fake_gpu
    backend = ReplayBackend([f"```python\n{GOOD}\n```"])
    cfg = AgentConfig(
        budget=1,
        compiler_seed=False,
        trials=2,
        aot_target=None,
        tune_trials=4,
        runs_dir=str(tmp_path),
        timeout_s=30,
    )
    res = run(RELU, cfg, backend=backend)
    first = res["attempts"][0]
    assert first["status"] == "slower" and first["speedup"] == pytest.approx(0.8)
    tuned = [a for a in res["attempts"] if a["source"].startswith("tuner:")]
    assert tuned, "the tuner did not run on a correct but slow kernel"
    assert res["best"]["speedup"] == pytest.approx(1.6)  # BLOCK_SIZE 1024 -> 2048 doubled it
    assert res["best"]["source"].startswith("tuner:")
    assert res["correct"] and res["faster"] and res["status"] == "ok"
    correct = sum(a["correct"] for a in tuned)
    assert [n for n in res["notes"] if n.startswith("tuner")] == [
        f"tuner: {len(tuned)} variants tried, {correct} correct; "
        f"best 1.60x ({res['best']['source']})"
    ]
    verdict = Verdict.from_dict(
        json.loads(Path(res["run_dir"], "attempts", "00", "verdict.json").read_text())
    )
    assert verdict.correct and verdict.device == "cuda"


def test_best_kernel_is_on_disk_before_the_run_finishes(fake_gpu, tmp_path, monkeypatch):
    """A run killed after finding a kernel keeps it: best_kernel.py is written when a new best is
    found (evaluate, tuner), not only by the final node."""
    import agent.nodes

    monkeypatch.setattr(agent.nodes, "write_final_files", lambda ctx, state: None)
    backend = ReplayBackend([f"```python\n{GOOD}\n```"])
    cfg = AgentConfig(
        budget=1,
        compiler_seed=False,
        trials=1,
        aot_target=None,
        tune_trials=2,
        runs_dir=str(tmp_path),
        timeout_s=30,
    )
    res = run(RELU, cfg, backend=backend)
    best_file = Path(res["run_dir"], "best_kernel.py")
    assert best_file.exists() and "class ModelNew" in best_file.read_text()
    assert not Path(res["run_dir"], "report.json").exists()  # the final node did not write it


def test_the_default_bar_is_the_better_of_eager_and_compile(fake_gpu, tmp_path):
    """1.5x over eager but torch.compile is twice as fast as eager: 0.75x over the better
    baseline, so `slower` (issue 15 item 4); every speedup is reported."""
    calls, speed = fake_gpu
    speed.update(value=1.5, compile_ratio=0.5)
    backend = ReplayBackend([f"```python\n{GOOD}\n```"])
    cfg = AgentConfig(
        budget=1,
        compiler_seed=False,
        trials=1,
        aot_target=None,
        tune=False,
        runs_dir=str(tmp_path),
        timeout_s=30,
    )
    assert cfg.baseline == "best"
    res = run(RELU, cfg, backend=backend)
    first = res["attempts"][0]
    assert first["status"] == "slower" and first["speedup"] == pytest.approx(0.75)
    assert first["speedups"] == pytest.approx({"eager": 1.5, "compile": 0.75, "best": 0.75})
    assert "0.75x over the better of eager and compile" in first["summary"]
    assert not res["faster"] and res["status"] != "ok"
    report = json.loads(Path(res["run_dir"], "report.json").read_text())
    assert report["baseline"] == "best"
