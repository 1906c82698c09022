"""The command line: `agent.cli.main` builds the parser from one module per command."""

from agent.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
