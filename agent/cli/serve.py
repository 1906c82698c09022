"""`python -m agent mcp` (an MCP server over stdio) and `python -m agent repl` (paste a module,
get a verified draft)."""

from __future__ import annotations

import argparse

from agent.cli.optimize import add_loop_options


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from agent.mcp_server import serve
    except ImportError as exc:  # the SDK is a dependency, but say plainly what is missing
        from tools.core.errors import BadInputError

        raise BadInputError(
            f"the MCP server needs the `mcp` package (pip install 'mcp>=2'): {exc}"
        ) from exc
    serve(runs_dir=args.runs_dir)
    return 0


def cmd_repl(args: argparse.Namespace) -> int:
    from agent.repl import repl

    return repl(args)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve verify/profile/optimize/repair as MCP tools over stdio")
    p.add_argument(
        "--runs-dir", default=None, help="where optimize/repair run directories go (default ./runs)"
    )
    p.set_defaults(handler=cmd_mcp)

    p = sub.add_parser(
        "repl",
        help="paste a PyTorch module, end with Ctrl-D: see the drafted Triton kernel and its verdict",
        description="Paste a PyTorch module (KernelBench format, or a plain nn.Module with get_inputs() and "
        "get_init_inputs()), then press Ctrl-D on an empty line. Each module is drafted with the configured "
        "backend (the compiler when no model is configured) and verified; --budget N > 1 refines failing "
        "drafts. Ctrl-D on an empty buffer exits.",
    )
    add_loop_options(p, budget=1)
    p.set_defaults(handler=cmd_repl)
