"""`python -m agent mcp`, driven by the official MCP client over stdio (a real server process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import EX, FAST, ROOT, write_replies


def server(*args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agent", "mcp", *args], cwd=str(ROOT)
    )


def run(scenario) -> None:
    async def guarded() -> None:
        with anyio.fail_after(240):  # a hung server fails the test instead of hanging it
            await scenario()

    anyio.run(guarded)


def test_tools_verify_and_errors_over_stdio():
    async def scenario() -> None:
        async with Client(server()) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) >= {"verify", "profile", "optimize", "repair"}
            for name in ("verify", "profile", "repair"):
                schema = listed[name].input_schema
                assert {"problem", "kernel"} <= set(schema["properties"]) and "problem" in schema[
                    "required"
                ]
                assert "source text" in schema["properties"]["problem"]["description"]
            assert "budget" in listed["optimize"].input_schema["properties"]
            assert listed["verify"].output_schema is not None

            good = await client.call_tool(
                "verify",
                {
                    "problem": "examples/problems/relu.py",
                    "kernel": "examples/kernels/relu.py",
                    **FAST,
                },
            )
            assert not good.is_error
            verdict = good.structured_content
            assert (
                verdict["status"] == "ok" and verdict["correct"] and verdict["schema_version"] == 1
            )
            assert verdict["evidence"]["audit"]["triton_launches"] > 0

            # source text instead of paths; a wrong kernel is a verdict, not a tool error
            bad = await client.call_tool(
                "verify",
                {
                    "problem": (EX / "problems" / "relu.py").read_text(),
                    "kernel": (EX / "broken" / "relu__mismatch.py").read_text(),
                    **FAST,
                },
            )
            assert not bad.is_error
            assert (
                bad.structured_content["status"] == "mismatch"
                and not bad.structured_content["correct"]
            )
            assert bad.structured_content["evidence"]["mismatch"]["bad_count"] > 0
            assert json.loads(bad.content[0].text)["status"] == "mismatch"

            # bad input: a tool error with the message; the server stays up
            missing = await client.call_tool(
                "verify", {"problem": "no/such/problem.py", "kernel": "examples/kernels/relu.py"}
            )
            assert missing.is_error and "problem file not found" in missing.content[0].text
            not_a_problem = await client.call_tool(
                "verify",
                {"problem": "import torch\nx = 1\n", "kernel": "examples/kernels/relu.py", **FAST},
            )
            assert not_a_problem.is_error and "get_inputs" in not_a_problem.content[0].text
            wrong_type = await client.call_tool(
                "verify", {"problem": "p.py", "kernel": "k.py", "trials": "many"}
            )
            assert wrong_type.is_error
            again = await client.call_tool(
                "verify",
                {
                    "problem": "examples/problems/relu.py",
                    "kernel": "examples/kernels/relu.py",
                    **FAST,
                },
            )
            assert again.structured_content["status"] == "ok"

    run(scenario)


def test_repair_reports_progress_over_stdio(tmp_path):
    good = (EX / "kernels" / "relu.py").read_text()
    replies = write_replies(tmp_path / "replies.jsonl", [f"```python\n{good}\n```"])
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def scenario() -> None:
        async with Client(server("--runs-dir", str(tmp_path / "runs"))) as client:
            res = await client.call_tool(
                "repair",
                {
                    "problem": "examples/problems/relu.py",
                    "kernel": "examples/broken/relu__syntax_error.py",
                    "budget": 2,
                    "replies": replies,
                    **FAST,
                },
                progress_callback=on_progress,
            )
            assert not res.is_error, res.content
            out = res.structured_content
            assert (
                out["command"] == "repair" and out["status"] == "ok" and out["schema_version"] == 1
            )
            assert [a["status"] for a in out["attempts"]] == ["syntax_error", "ok"]
            assert Path(out["run_dir"]).parent == tmp_path / "runs"

            no_backend = await client.call_tool(
                "optimize",
                {"problem": "examples/problems/relu.py", "budget": 1, "backend": "replay", **FAST},
            )
            assert no_backend.is_error and "replies" in no_backend.content[0].text

    run(scenario)
    messages = [m or "" for _, m in progress]
    values = [v for v, _ in progress]
    assert values == sorted(values) and len(set(values)) == len(values)  # strictly increasing
    assert any("attempt 0: syntax_error" in m for m in messages)
    assert any("attempt 1: ok" in m for m in messages)
    assert any(m.startswith("run ") for m in messages) and any(
        "round 2: drafting" in m for m in messages
    )
    assert messages[-1].startswith("stopped: found a correct kernel")
