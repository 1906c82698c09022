"""Issue 37: every command and the API verify through the one evaluation path. agent/ builds a
`Verifier` in one place (`agent.evaluation.make_verifier`); `verify` (the command, the API and
so the MCP tool) goes through `tools.orchestrate.evaluate.evaluate`, and `profile` through the one
`agent.evaluation.profile_candidate`. No job runs here: the seams are replaced."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

import agent
import tools.orchestrate.evaluate
from agent.evaluation import make_verifier
from tests.helpers import ROOT, last_json
from tools.orchestrate.evaluate import Evaluation, no_code_verdict
from tools.orchestrate.verify import Verifier, VerifyOptions

RELU = str(ROOT / "examples" / "problems" / "relu.py")
KERNEL = str(ROOT / "examples" / "kernels" / "relu.py")


def _verifier_calls(path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        n.lineno for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (getattr(n.func, "id", None) == "Verifier" or getattr(n.func, "attr", None) == "Verifier")
    ]  # fmt: skip


def test_agent_builds_a_verifier_in_one_place():
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / "agent").rglob("*.py"))
        if (lines := _verifier_calls(p))
    }
    assert set(found) == {"agent/evaluation.py"}, found
    assert len(found["agent/evaluation.py"]) == 1


def test_the_finder_sees_a_verifier_built_by_hand(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("from tools.orchestrate import verify\nv = verify.Verifier(o)\nw = Verifier()\n")
    assert _verifier_calls(path) == [2, 3]


@pytest.fixture
def faked_evaluate(monkeypatch):
    """`tools.orchestrate.evaluate.evaluate` replaced: it records each call and says `mismatch`."""
    seen: list[dict] = []

    def fake(problem, code, *, verifier, kernel_path="candidate.py", **kw):
        seen.append({"problem": problem.name, "kernel": kernel_path, **kw})
        verdict = no_code_verdict("faked")
        verdict.status = "mismatch"
        return Evaluation(
            status="mismatch", correct=False, compiled=True, verdict=verdict, baseline="best"
        )

    monkeypatch.setattr(tools.orchestrate.evaluate, "evaluate", fake)
    return seen


def test_the_verify_command_and_the_api_verify_through_tools_evaluate(faked_evaluate, capsys):
    from agent.cli.main import main

    assert main(["verify", RELU, KERNEL, "--json", "--target", "none", "--trials", "1"]) == 1
    assert last_json(capsys)["status"] == "mismatch"
    verdict = agent.verify(RELU, KERNEL, trials=1, aot_target=None)
    assert verdict.status == "mismatch"
    assert [c["kernel"] for c in faked_evaluate] == [KERNEL, KERNEL]
    assert all(c["measure"] is False for c in faked_evaluate)  # verify never times


def test_the_mcp_verify_tool_is_the_api(faked_evaluate):
    import anyio

    from agent.mcp_server import build_server

    server = build_server()

    async def call():
        return await server.call_tool(
            "verify", {"problem": RELU, "kernel": KERNEL, "trials": 1, "aot_target": None}
        )

    anyio.run(call)
    assert len(faked_evaluate) == 1


def test_the_profile_command_and_the_api_profile_through_one_function(monkeypatch, capsys):
    import agent.evaluation
    from agent.cli.main import main
    from tools.orchestrate.profile_result import ProfileResult

    seen = []

    def fake(verifier, problem, source, kernel_path="candidate.py", options=None):
        seen.append((kernel_path, options.baseline))
        return ProfileResult(status="unavailable", device="cpu", problem=problem.path,
                             kernel=kernel_path, baseline=options.baseline, message="faked")  # fmt: skip

    monkeypatch.setattr(agent.evaluation, "profile_candidate", fake)
    assert main(["profile", RELU, KERNEL, "--json", "--baseline", "eager"]) == 1
    assert last_json(capsys)["message"] == "faked"
    assert agent.profile(RELU, KERNEL, trials=1).message == "faked"
    assert seen == [(KERNEL, "eager"), (KERNEL, "best")]
    with pytest.raises(TypeError, match="not both"):
        agent.profile(RELU, KERNEL, verifier=SimpleNamespace(), trials=1)


def test_a_ray_task_verifier_runs_one_job_at_a_time_on_the_cpu(monkeypatch):
    made = []

    def factory(**kw):
        made.append(kw)
        return SimpleNamespace(slots=kw.get("max_workers"))

    monkeypatch.setattr(Verifier, "sandbox_factory", staticmethod(factory))
    options = VerifyOptions(device="cpu", jobs_per_gpu=3, timeout_s=7.0)
    assert make_verifier(options, one_job=True).sandbox.slots == 1
    make_verifier(options)
    assert [m.get("max_workers") for m in made] == [1, None]
    assert made[0]["limits"].timeout_s == 7.0 and made[0]["jobs_per_gpu"] == 3
