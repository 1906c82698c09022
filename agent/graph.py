"""The refinement loop, wired. Nodes live in `agent.nodes`; this file only connects them.

baseline -> draft -> evaluate -> decide -> feedback -> draft ...
                                    |-> tune -> decide
                                    `-> finish
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from agent import nodes
from agent.context import RunContext
from agent.state import AgentState


def build_graph(checkpointer: Any = None):
    """The compiled graph. Invoke with `context=RunContext(...)`; pass a checkpointer (e.g.
    `SqliteSaver`) to make runs resumable. A host application can embed it as a subgraph."""
    g = StateGraph(AgentState, context_schema=RunContext)
    g.add_node("baseline", nodes.baseline)
    g.add_node("draft", nodes.draft)
    g.add_node("evaluate", nodes.evaluate)
    g.add_node("decide", nodes.decide)
    g.add_node("feedback", nodes.feedback)
    g.add_node("tune", nodes.tune)
    g.add_node("finish", nodes.finish)

    g.add_edge(START, "baseline")
    g.add_edge("baseline", "draft")
    g.add_edge("draft", "evaluate")
    g.add_edge("evaluate", "decide")
    g.add_conditional_edges(
        "decide", nodes.route, {"feedback": "feedback", "tune": "tune", "finish": "finish"}
    )
    g.add_edge("feedback", "draft")
    g.add_edge("tune", "decide")
    g.add_edge("finish", END)
    return g.compile(checkpointer=checkpointer)
