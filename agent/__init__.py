"""triton-agent: turn PyTorch modules into verified Triton kernels.

The Python API (`agent.api`) is re-exported here and loaded on first use, so `import agent`
costs almost nothing (no torch, triton or langgraph until a function is called):

    import agent
    verdict = agent.verify("problem.py", "kernel.py")
    result = agent.optimize("problem.py", budget=8, chat_model=my_chat_model)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "OptimizeResult",
    "PreparedRun",
    "build_graph",
    "generate_triton",
    "optimize",
    "prepare_run",
    "profile",
    "repair",
    "verify",
]

if TYPE_CHECKING:
    from agent.api import (
        OptimizeResult,
        PreparedRun,
        generate_triton,
        optimize,
        prepare_run,
        profile,
        repair,
        verify,
    )
    from agent.graph import build_graph


def __getattr__(name: str) -> Any:
    if name == "build_graph":
        from agent.graph import build_graph

        return build_graph
    if name in __all__:
        from agent import api

        return getattr(api, name)
    raise AttributeError(f"module 'agent' has no attribute {name!r}")
