"""The Python API (`agent.api`, re-exported by `agent`), the LangGraph embedding example of
docs/integrations.md, and the JSON keys documented in docs/json.md."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from langchain_core.language_models.fake_chat_models import FakeListChatModel

import agent
from agent.cli import main
from agent.llm.replay import ReplayBackend
from tests.helpers import EX, FAST, FAST_CLI, ROOT, fenced, last_json, write_replies
from tools.core.errors import BadInputError

RELU = str(EX / "problems" / "relu.py")
GOOD = (EX / "kernels" / "relu.py").read_text()


def test_import_agent_is_cheap():
    code = "import sys, agent; print(sorted(m for m in ('torch', 'triton', 'langgraph', 'mcp') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_verify_accepts_paths_and_source_text():
    by_path = agent.verify(RELU, str(EX / "kernels" / "relu.py"), **FAST)
    assert by_path.correct and by_path.status == "ok"
    by_text = agent.verify(
        Path(RELU).read_text(), (EX / "broken" / "relu__mismatch.py").read_text(), **FAST
    )
    assert by_text.status == "mismatch" and not by_text.correct
    assert "outside atol" in by_text.feedback()


def test_verify_bad_input_and_unknown_options():
    with pytest.raises(BadInputError, match="not found"):
        agent.verify("missing.py", GOOD)
    with pytest.raises(BadInputError, match="not a KernelBench problem"):
        agent.verify("import torch\nx = 1\n", GOOD)
    with pytest.raises(TypeError, match="budget"):
        agent.verify(RELU, GOOD, budget=3)


def test_optimize_with_a_backend_object_returns_a_typed_result(tmp_path):
    backend = ReplayBackend(
        [fenced((EX / "broken" / "relu__syntax_error.py").read_text()), fenced(GOOD)]
    )
    events = []
    res = agent.optimize(
        RELU,
        budget=3,
        backend=backend,
        compiler_seed=False,
        runs_dir=str(tmp_path),
        on_event=events.append,
        **FAST,
    )
    assert isinstance(res, agent.OptimizeResult)
    assert res.ok and res.correct and res.command == "optimize"
    assert [a["status"] for a in res.attempts] == ["syntax_error", "ok"]
    assert "class ModelNew" in res.best_kernel_source
    assert res.to_dict() == json.loads((Path(res.run_dir) / "report.json").read_text())
    assert [e["event"] for e in events if e["event"] == "attempt"] == ["attempt", "attempt"]
    assert "SyntaxError" in backend.prompts[1]


def test_repair_from_source_text_with_a_named_backend(tmp_path):
    replies = write_replies(tmp_path / "replies.jsonl", [fenced(GOOD)])
    broken = (EX / "broken" / "relu__crash.py").read_text()
    res = agent.repair(
        Path(RELU).read_text(),
        broken,
        budget=2,
        backend="replay",
        replies=replies,
        runs_dir=str(tmp_path / "runs"),
        **FAST,
    )
    assert res.ok and res.command == "repair"
    assert [(a["source"], a["status"]) for a in res.attempts] == [
        ("given", "crash"),
        ("llm:replay", "ok"),
    ]
    assert Path(res.problem).read_text() == Path(RELU).read_text()  # the text was saved for resume


def test_optimize_with_a_host_langchain_chat_model(tmp_path):
    model = FakeListChatModel(responses=[fenced(GOOD)])
    res = agent.optimize(
        RELU, budget=2, chat_model=model, compiler_seed=False, runs_dir=str(tmp_path), **FAST
    )
    assert res.ok
    prompt = (Path(res.run_dir) / "attempts" / "00" / "prompt.txt").read_text()
    assert "[system]" in prompt and "class Model" in prompt  # chat-format prompt for a chat model


def test_api_rejects_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="no_such_option"):
        agent.optimize(RELU, budget=1, no_such_option=1, runs_dir=str(tmp_path))
    with pytest.raises(BadInputError, match="either backend"):
        agent.optimize(
            RELU,
            backend=ReplayBackend([]),
            chat_model=FakeListChatModel(responses=[]),
            runs_dir=str(tmp_path),
        )
    with pytest.raises(BadInputError, match="budget"):
        agent.optimize(RELU, budget=0, runs_dir=str(tmp_path))


def test_generate_triton_renders_the_kernelllm_prompt_and_extracts_code():
    backend = ReplayBackend([fenced(GOOD) + "\nThis kernel applies ReLU elementwise."])
    source = Path(RELU).read_text()
    code = agent.generate_triton(source, backend=backend, temperature=0.5)
    assert code.strip() == GOOD.strip()
    prompt = backend.prompts[0]
    assert isinstance(prompt, str) and source.strip() in prompt  # KernelLLM's raw completion prompt
    assert backend.calls[0]["n"] == 1 and backend.calls[0]["temperature"] == 0.5
    chat = agent.generate_triton(source, chat_model=FakeListChatModel(responses=["no code, sorry"]))
    assert chat == "no code, sorry"


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the answer on a machine without a GPU"
)
def test_profile_is_unavailable_without_a_gpu():
    result = agent.profile(RELU, str(EX / "kernels" / "relu.py"), **FAST)
    assert result.status == "unavailable"
    assert result.to_dict()["verdict"]["status"] == "ok"


def test_integrations_doc_subgraph_example(tmp_path, monkeypatch):
    """Runs the LangGraph embedding example of docs/integrations.md exactly as written."""
    doc = (ROOT / "docs" / "integrations.md").read_text()
    section = doc.split("## Embed the loop in a LangGraph application", 1)[1]
    block = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M).group(1)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TRITON_AGENT_RUNS", str(tmp_path / "runs"))
    namespace: dict = {"__name__": "doc_example"}
    exec(compile(block, "docs/integrations.md", "exec"), namespace)
    assert namespace["out"]["status"] == "ok"
    assert list((tmp_path / "runs").glob("*/best_kernel.py"))


# ------------------------------------------------------------------------------------------
# docs/json.md: the documented top-level keys are what the commands print


def documented_keys(title: str) -> set[str]:
    """Top-level keys of the table under the `### <title>` heading of docs/json.md."""
    doc = (ROOT / "docs" / "json.md").read_text()
    section = doc.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    keys = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert keys, f"no `key` rows parsed under ### {title} in docs/json.md"
    return keys


def test_json_doc_matches_verify_output(capsys):
    keys = documented_keys("verify")
    assert {"status", "correct", "evidence", "schema_version"} <= keys
    assert main(["verify", RELU, str(EX / "kernels" / "relu.py"), "--json", *FAST_CLI]) == 0
    out = last_json(capsys)
    assert keys <= set(out), f"documented but missing: {keys - set(out)}"
    assert out["schema_version"] == 1
    assert documented_keys("verify evidence") <= set(out["evidence"])


def test_json_doc_matches_optimize_output(tmp_path, capsys):
    keys = documented_keys("optimize and repair")
    assert {"status", "best_kernel", "attempts", "schema_version"} <= keys
    replies = write_replies(tmp_path / "r.jsonl", [fenced(GOOD)])
    assert (
        main(
            [
                "optimize",
                RELU,
                "--replies",
                replies,
                "--no-compiler-seed",
                "--budget",
                "1",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--json",
                *FAST_CLI,
            ]
        )
        == 0
    )
    out = last_json(capsys)
    assert keys <= set(out), f"documented but missing: {keys - set(out)}"
    assert out["schema_version"] == 1
    assert documented_keys("optimize attempts") <= set(out["attempts"][0])
    assert set(agent.OptimizeResult.from_dict(out).to_dict()) == set(out)


def test_json_doc_matches_error_output(capsys):
    assert main(["verify", "missing.py", str(EX / "kernels" / "relu.py"), "--json"]) == 2
    keys = documented_keys("errors")
    assert keys and keys <= set(last_json(capsys))
