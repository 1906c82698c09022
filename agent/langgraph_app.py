"""The loop as a LangGraph server graph (`langgraph dev`, LangGraph Studio, the LangGraph SDK).

`langgraph.json` names `make_graph`, a factory: the server calls it and gets a graph that needs
nothing from this project's own entry points. A run's input is `{"problem": path or source,
"kernel": optional failing kernel}`; its options come from the run's context (`ServeContext`:
budget, backend, model, base_url, ...; the API's `context=` or Studio's assistant settings) with
`configurable` keys of the same names on top. The first node, `setup`, builds the run directory,
the verifier and the LLM backend from them (`agent.prepare_run`); the loop's own nodes then run
unchanged, each given the live `RunContext` of its run.

Progress: every loop event (baseline, drafting, each attempt with its verdict, finish) goes out
on LangGraph's custom stream (`stream_mode="custom"`, written with the node's stream writer).

Approval: with `approve=True` the graph stops before accepting a kernel (`interrupt`, with the
kernel's summary and code); resume with `Command(resume=True)` to accept it, or `False` to reject
it and go on refining while budget lasts. With `approve_spend=True` it also stops before each
round spends budget (the round, the candidates it would draft, the budget left, the best so
far); `True` drafts the round, `False` finishes with what was found.

The live objects (verifier and its worker processes, backend) are kept per run id in this process
(`_LIVE`); state holds plain data only and is checkpointed by the server as usual. After a
server restart a thread's context is built again from its run id and options.
"""

from __future__ import annotations

import contextvars
import dataclasses
import os
import threading
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agent import nodes
from agent.context import RunContext
from agent.options import options_dataclass
from agent.state import AgentState

ServedOptions = options_dataclass("ServedOptions", exclude=("api_key",))
"""Every option of the table, with its default (an API key is not a graph setting: it would be
shown in Studio and stored with the thread; the server's environment gives it)."""

SERVE_ONLY = ("runs_dir", "approve", "approve_spend")
"""The settings of a served run that are not options of the table."""


@dataclass(kw_only=True)
class ServeContext(ServedOptions):  # type: ignore[misc,valid-type]
    """A served run's options (the graph's context schema: Studio shows these as settings):
    the option table's (`ServedOptions`), and where the run goes and when it stops for a
    person."""

    runs_dir: str | None = None
    """Where run directories go; default `served_runs_dir()`, outside the served project."""
    approve: bool = False
    """Stop for a person's approval (an interrupt) before a kernel is accepted."""
    approve_spend: bool = False
    """Stop for a person's approval before each round spends budget on new candidates."""

    def options(self, configurable: dict[str, Any] | None = None) -> dict[str, Any]:
        """AgentConfig keywords: these fields, `configurable` keys of the same names on top."""
        names = {f.name for f in dataclasses.fields(self)} - {"approve", "approve_spend"}
        opts = {n: getattr(self, n) for n in names}
        opts.update({k: v for k, v in (configurable or {}).items() if k in names})
        opts["runs_dir"] = opts.get("runs_dir") or served_runs_dir()
        return {k: v for k, v in opts.items() if v is not None or k == "aot_target"}


def served_runs_dir() -> str:
    """Where a served run writes when its options name no `runs_dir`: `$TRITON_AGENT_RUNS`
    when set, else `$XDG_CACHE_HOME/triton-agent/served-runs` (`~/.cache/...`).

    Not `./runs`: `langgraph dev` reloads its server (uvicorn, watching every `*.py` under its
    working directory, the project root) when a file changes there, and a run writes
    `best_kernel.py` and `attempts/NN/kernel.py`: the server restarted mid-run, cancelled the
    run, retried it from the checkpoint and lost the stream's events meanwhile."""
    if os.environ.get("TRITON_AGENT_RUNS"):
        return os.environ["TRITON_AGENT_RUNS"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "triton-agent", "served-runs")


class ServedState(AgentState, total=False):
    problem: str
    """Input: the problem file's path, or its source text."""
    kernel: str | None
    """Input (optional): a failing kernel to repair, path or source."""
    run_id: str
    """The run directory's id (<runs_dir>/<run_id>/), set by `setup`."""
    needs_approval: bool
    """Stop before accepting a kernel (from the context's `approve`)."""
    needs_spend_approval: bool
    """Stop before each round spends budget (from the context's `approve_spend`)."""


_LIVE: dict[str, RunContext] = {}
_LOCK = threading.Lock()


def _configurable() -> dict[str, Any]:
    try:
        from langgraph.config import get_config

        return dict(get_config().get("configurable") or {})
    except RuntimeError:  # not inside a run
        return {}


def _serve_context(runtime: Runtime[Any]) -> ServeContext:
    ctx = runtime.context
    if isinstance(ctx, ServeContext):
        return ctx
    if isinstance(ctx, dict):  # a plain mapping handed in by a client
        names = {f.name for f in dataclasses.fields(ServeContext)}
        return ServeContext(**{k: v for k, v in ctx.items() if k in names})
    return ServeContext()


def setup(state: ServedState, runtime: Runtime[ServeContext]) -> dict[str, Any]:
    """Build the run directory, verifier and backend from the run's options."""
    from agent.api import prepare_run

    if state.get("run_id") and state["run_id"] in _LIVE:
        return {}
    serve = _serve_context(runtime)
    if not state.get("problem"):
        raise ValueError('the input needs "problem": a problem file path or its source text')
    prepared = prepare_run(state["problem"], state.get("kernel"), **serve.options(_configurable()))
    run_id = prepared.context.rundir.run_id
    with _LOCK:
        _LIVE[run_id] = prepared.context
    return {
        **prepared.state,
        "run_id": run_id,
        "needs_approval": serve.approve,
        "needs_spend_approval": serve.approve_spend,
    }


def _rebuild(state: ServedState, runtime: Runtime[Any]) -> RunContext:
    """The live context of a run whose process did not set it up (a restarted server)."""
    from agent.api import make_config, resolve_backend
    from agent.rundir import RunDir
    from agent.runner import make_context

    options = _serve_context(runtime).options(_configurable())
    backend = resolve_backend(None, None, options)
    cfg = make_config(**options)
    mode = "repair" if state.get("start_code") else "optimize"
    return make_context(cfg, RunDir(cfg.runs_dir, state["run_id"]), backend=backend, mode=mode)


def _live(fn: Any) -> Any:
    """Run loop node `fn` with its run's RunContext; its events go to the custom stream."""

    def node(state: ServedState, runtime: Runtime[Any]) -> dict[str, Any]:
        with _LOCK:
            ctx = _LIVE.get(state["run_id"])
        if ctx is None:
            ctx = _rebuild(state, runtime)
            with _LOCK:
                _LIVE[state["run_id"]] = ctx
        writer, snapshot = runtime.stream_writer, contextvars.copy_context()

        def on_event(event: dict[str, Any]) -> None:
            # Events also come from the evaluation's worker threads, where LangGraph's run
            # context is not set: write each through a copy of this node's context.
            snapshot.copy().run(writer, {"run_id": state["run_id"], **event})

        ctx.on_event = on_event
        try:
            return fn(state, runtime.override(context=ctx))
        finally:
            if fn is nodes.finish:
                with _LOCK:
                    _LIVE.pop(state["run_id"], None)

    node.__name__ = fn.__name__
    node.__doc__ = fn.__doc__
    return node


def approve(state: ServedState) -> dict[str, Any]:
    """Ask a person before a kernel is accepted; a rejection sends the loop on."""
    best = state.get("best")
    answer = interrupt(
        {
            "question": "accept this kernel?",
            "run_id": state.get("run_id"),
            "attempt": best["index"],
            "summary": best["summary"],
            "speedups": best.get("speedups"),
            "code": best.get("code"),
        }
    )
    accepted = answer.get("accept") if isinstance(answer, dict) else bool(answer)
    if accepted:
        return {}
    if state.get("budget_left", 0) <= 0:
        return {"best": None, "stop_reason": "the reviewer rejected the kernel; budget spent"}
    return {"best": None, "stop_reason": None, "decision": "feedback"}


def approve_spend(state: ServedState) -> dict[str, Any]:
    """Ask a person before a round spends budget; a refusal finishes with what was found."""
    best = state.get("best")
    answer = interrupt(
        {
            "question": "spend budget on another round?",
            "run_id": state.get("run_id"),
            "round": state.get("round", 0) + 1,
            "budget_left": state.get("budget_left"),
            "best": best["summary"] if best else None,
        }
    )
    accepted = answer.get("accept") if isinstance(answer, dict) else bool(answer)
    return {} if accepted else {"stop_reason": "the reviewer stopped spending budget"}


def before_draft(state: ServedState) -> Literal["draft", "approve_spend"]:
    return "approve_spend" if state.get("needs_spend_approval") else "draft"


def after_approve_spend(state: ServedState) -> Literal["draft", "finish"]:
    return "finish" if state.get("stop_reason") else "draft"


def after_decide(state: ServedState) -> Literal["feedback", "tune", "finish", "approve"]:
    decision = nodes.route(state)
    if decision == "finish" and state.get("needs_approval") and state.get("best") is not None:
        return "approve"
    return decision


def after_approve(state: ServedState) -> Literal["feedback", "finish"]:
    return (
        "feedback"
        if state.get("decision") == "feedback" and not state.get("stop_reason")
        else "finish"
    )


def build_served_graph(checkpointer: Any = None):
    """setup -> baseline -> [approve_spend] -> draft -> evaluate -> decide -> (feedback ->
    [approve_spend] -> draft | tune | [approve] -> finish)."""
    g = StateGraph(ServedState, context_schema=ServeContext)
    g.add_node("setup", setup)
    for fn in (nodes.baseline, nodes.draft, nodes.evaluate, nodes.decide, nodes.feedback):
        g.add_node(fn.__name__, _live(fn))
    g.add_node("tune", _live(nodes.tune))
    g.add_node("approve", approve)
    g.add_node("approve_spend", approve_spend)
    g.add_node("finish", _live(nodes.finish))

    g.add_edge(START, "setup")
    g.add_edge("setup", "baseline")
    g.add_conditional_edges("baseline", before_draft, ["draft", "approve_spend"])
    g.add_conditional_edges("approve_spend", after_approve_spend, ["draft", "finish"])
    g.add_edge("draft", "evaluate")
    g.add_edge("evaluate", "decide")
    g.add_conditional_edges("decide", after_decide, ["feedback", "tune", "finish", "approve"])
    g.add_conditional_edges("approve", after_approve, ["feedback", "finish"])
    g.add_conditional_edges("feedback", before_draft, ["draft", "approve_spend"])
    g.add_edge("tune", "decide")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer, name="triton-agent")


def make_graph(config: Any = None):
    """The factory `langgraph.json` names: the server calls it (with the run's config) and
    serves the graph under its own checkpointer."""
    return build_served_graph()
