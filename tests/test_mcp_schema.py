"""The MCP server's typed surface, seen from the official MCP client over stdio: output schemas
for every tool, read-only / idempotent hints, the package version, past runs as resources."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import sys
from pathlib import Path

import anyio
import jsonschema
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import FAST, ROOT
from tools.core.results import STATUSES


def run(scenario) -> None:
    async def guarded() -> None:
        with anyio.fail_after(240):
            await scenario()

    anyio.run(guarded)


def _runs(tmp_path: Path) -> Path:
    """A runs directory with one finished run (report.json, best_kernel.py)."""
    d = tmp_path / "runs" / "20261130-120000-relu-abcd"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"problem_path": "examples/problems/relu.py"}))
    report = {
        "schema_version": 1,
        "command": "optimize",
        "status": "ok",
        "problem": "examples/problems/relu.py",
        "best": {"index": 1, "source": "llm:x", "status": "ok", "speedup": 1.5},
        "attempts": [{"index": 1}],
    }
    (d / "report.json").write_text(json.dumps(report))
    shutil.copy(ROOT / "examples" / "kernels" / "relu.py", d / "best_kernel.py")
    return tmp_path / "runs"


def test_schemas_hints_version_and_run_resources(tmp_path: Path):
    runs = _runs(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "mcp", "--runs-dir", str(runs)],
        cwd=str(ROOT),
    )

    async def scenario() -> None:
        async with Client(params) as client:
            assert client.server_info.name == "triton-agent"
            assert client.server_info.version == importlib.metadata.version("triton-agent")

            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name, tool in tools.items():
                schema = tool.output_schema
                assert schema and schema.get("properties"), name
                assert len(schema["properties"]) >= 10, name  # typed, not {"type": "object"}
                assert "required" in schema, name
                jsonschema.Draft202012Validator.check_schema(schema)
                assert tool.annotations is not None, name
            v = tools["verify"].output_schema
            assert set(v["properties"]["status"]["enum"]) == set(STATUSES)
            assert {"status", "correct", "evidence", "message"} <= set(v["required"]) | set(
                v["properties"]
            )
            assert "description" in v["properties"]["trials"] or v["properties"]["evidence"]
            p = tools["profile"].output_schema["properties"]
            assert {
                "speedup_eager",
                "speedup_compile",
                "kernels",
                "roofline",
                "kernelbench",
            } <= set(p)
            r = tools["optimize"].output_schema
            assert {"status", "run_dir", "attempts", "best"} <= set(r["properties"])
            assert tools["repair"].output_schema == r
            for name in ("verify", "profile"):
                a = tools[name].annotations
                assert a.read_only_hint is True and a.idempotent_hint is True
            for name in ("optimize", "repair"):
                a = tools[name].annotations
                assert a.read_only_hint is False and a.destructive_hint is False
                assert a.open_world_hint is True

            # a real call's structured content validates against the published schema (a
            # syntax error: a full verdict with evidence, without running a kernel)
            got = await client.call_tool(
                "verify",
                {
                    "problem": "examples/problems/relu.py",
                    "kernel": "examples/broken/relu__syntax_error.py",
                    **FAST,
                },
            )
            assert not got.is_error, got.content
            jsonschema.validate(got.structured_content, v)
            assert got.structured_content["status"] == "syntax_error"
            assert got.structured_content["evidence"]["error"]["line"]

            # past runs as resources
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            assert "triton-agent://runs" in listed
            templates = {
                t.uri_template for t in (await client.list_resource_templates()).resource_templates
            }
            assert "triton-agent://runs/{run_id}" in templates
            index = await client.read_resource("triton-agent://runs")
            runs_listed = json.loads(index.contents[0].text)
            assert [x["run_id"] for x in runs_listed] == ["20261130-120000-relu-abcd"]
            assert runs_listed[0]["best_speedup"] == 1.5
            one = await client.read_resource("triton-agent://runs/20261130-120000-relu-abcd")
            assert json.loads(one.contents[0].text)["status"] == "ok"
            kernel = await client.read_resource(
                "triton-agent://runs/20261130-120000-relu-abcd/best_kernel.py"
            )
            assert "class ModelNew" in kernel.contents[0].text

    run(scenario)
