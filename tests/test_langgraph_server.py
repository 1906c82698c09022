"""The served graph (`langgraph.json` -> agent.langgraph_app:make_graph): built from the run's
options alone, progress on LangGraph's custom stream, approval interrupts before a kernel is
accepted and before budget is spent. Driven with the graph's own stream API, and through `langgraph dev` and the LangGraph
SDK on localhost when langgraph-api is installed (the `langgraph-server` extra)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.langgraph_app import ServeContext, make_graph
from tests.helpers import EX, ROOT, fenced, write_replies

GOOD = fenced((EX / "kernels/relu.py").read_text())
BAD = fenced((EX / "broken/relu__mismatch.py").read_text())


def options(tmp_path: Path, replies: list[str], **kw) -> dict:
    return dict(
        replies=write_replies(tmp_path / "r.jsonl", replies),
        budget=2,
        compiler_seed=False,
        trials=2,
        aot_target=None,
        timeout_s=240.0,
        runs_dir=str(tmp_path / "runs"),
        **kw,
    )


def test_langgraph_json_names_the_factory():
    spec = json.loads((ROOT / "langgraph.json").read_text())
    module, attr = spec["graphs"]["triton_agent"].split(":")
    assert (ROOT / module).exists() and attr == "make_graph"


def test_factory_graph_streams_progress_and_finishes(tmp_path: Path):
    """No project context handed in: the graph builds verifier and backend from its options."""
    graph = make_graph({"configurable": {}})
    custom, last = [], None
    for mode, chunk in graph.stream(
        {"problem": str(EX / "problems/relu.py")},
        context=ServeContext(**options(tmp_path, [BAD, GOOD])),
        stream_mode=["custom", "values"],
    ):
        if mode == "custom":
            custom.append(chunk)
        else:
            last = chunk
    kinds = [e["event"] for e in custom]
    assert "drafting" in kinds and kinds.count("attempt") == 2 and kinds[-1] == "finish"
    statuses = [e["attempt"]["status"] for e in custom if e["event"] == "attempt"]
    assert statuses == ["mismatch", "ok"]
    assert last["best"]["index"] == 1 and last["stop_reason"].startswith("found a correct")
    assert (tmp_path / "runs" / last["run_id"] / "best_kernel.py").exists()
    assert (tmp_path / "runs" / last["run_id"] / "report.html").exists()


def test_approval_interrupt_reject_then_accept(tmp_path: Path):
    graph = make_graph()
    graph = graph.builder.compile(checkpointer=InMemorySaver())  # the server brings its own
    cfg = {"configurable": {"thread_id": "t1"}}
    ctx = ServeContext(**options(tmp_path, [GOOD, GOOD], approve=True))
    out = graph.invoke({"problem": str(EX / "problems/relu.py")}, cfg, context=ctx)
    asked = out["__interrupt__"][0].value
    assert asked["question"] == "accept this kernel?" and asked["attempt"] == 0
    assert "class ModelNew" in asked["code"]
    out = graph.invoke(Command(resume=False), cfg, context=ctx)  # rejected: draft again
    assert out["__interrupt__"][0].value["attempt"] == 1
    out = graph.invoke(Command(resume=True), cfg, context=ctx)  # accepted
    assert "__interrupt__" not in out and out["best"]["index"] == 1
    assert len(out["attempts"]) == 2


def test_approval_before_budget_is_spent(tmp_path: Path):
    """approve_spend: the graph asks before each round drafts; a refusal finishes with what was
    found, and the budget it did not spend stays unspent."""
    graph = make_graph().builder.compile(checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "spend"}}
    ctx = ServeContext(**options(tmp_path, [BAD, GOOD], approve_spend=True))
    out = graph.invoke({"problem": str(EX / "problems/relu.py")}, cfg, context=ctx)
    asked = out["__interrupt__"][0].value
    assert asked["question"] == "spend budget on another round?" and asked["round"] == 1
    assert asked["budget_left"] == 2 and asked["best"] is None
    assert not out.get("attempts")  # nothing drafted before the answer
    out = graph.invoke(Command(resume=True), cfg, context=ctx)  # round 1: the mismatch
    asked = out["__interrupt__"][0].value
    assert asked["round"] == 2 and asked["budget_left"] == 1
    assert [a["status"] for a in out["attempts"]] == ["mismatch"]
    out = graph.invoke(Command(resume=False), cfg, context=ctx)  # no second round
    assert "__interrupt__" not in out and len(out["attempts"]) == 1
    assert out["stop_reason"] == "the reviewer stopped spending budget"
    assert (tmp_path / "runs" / out["run_id"] / "report.json").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("langgraph_api") is None
    or importlib.util.find_spec("langgraph_sdk") is None
    or shutil.which("langgraph") is None,
    reason="langgraph-cli[inmem] / langgraph-sdk not installed (extra: langgraph-server)",
)
def test_served_by_langgraph_dev_through_the_sdk(tmp_path: Path):
    import anyio
    from langgraph_sdk import get_client

    port = _free_port()
    # the repository's langgraph.json, its graph path made absolute (the server resolves it
    # against its working directory, here a temporary one so its state stays out of the repo)
    spec = json.loads((ROOT / "langgraph.json").read_text())
    path, attr = spec["graphs"]["triton_agent"].split(":")
    spec["graphs"]["triton_agent"] = f"{(ROOT / path).resolve()}:{attr}"
    (tmp_path / "langgraph.json").write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LANGSMITH_TRACING": "false"}
    server = subprocess.Popen(
        ["langgraph", "dev", "--no-browser", "--no-reload", "--port", str(port),
         "--config", str(tmp_path / "langgraph.json")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:

        async def scenario() -> None:
            client = get_client(url=f"http://127.0.0.1:{port}")
            deadline = time.monotonic() + 90
            while True:
                try:
                    await client.assistants.search()
                    break
                except Exception:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise
                    await anyio.sleep(1)
            thread = await client.threads.create()
            events, values = [], None
            async for part in client.runs.stream(
                thread["thread_id"],
                "triton_agent",
                input={"problem": str(EX / "problems/relu.py")},
                context=options(tmp_path, [GOOD]),
                stream_mode=["custom", "values"],
            ):
                if part.event == "custom":
                    events.append(part.data)
                elif part.event == "values":
                    values = part.data
                elif part.event == "error":
                    raise AssertionError(part.data)
            assert [e["event"] for e in events if e["event"] == "attempt"] == ["attempt"]
            assert values["best"]["status"] == "ok"

        anyio.run(scenario)
    except BaseException:
        if server.poll() is not None:
            print(server.stdout.read()[-4000:])
        raise
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
