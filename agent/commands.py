"""Sub-commands beyond `verify`: each module registers its parser and handler here."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the sub-commands whose modules exist."""
    from agent import cmd_optimize

    cmd_optimize.register(sub)
    from agent import cmd_profile

    cmd_profile.register(sub)
    __import__("agent.cmd_bench", fromlist=["register"]).register(sub)
    __import__("agent.cmd_integrations", fromlist=["register"]).register(sub)  # mcp, repl
    __import__("agent.cmd_dataset", fromlist=["register"]).register(
        sub
    )  # dataset build/stats, train
