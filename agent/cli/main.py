"""`python -m agent <command>`: the command-line boundary.

Conventions (DESIGN.md): with `--json` the last line of stdout is one JSON object; progress and
logs go to stderr. One exit-code rule for every command: 0 = it achieved its aim, 1 = the
candidate or run failed (incorrect, slower, budget spent, a server that cannot be reached),
2 = the input or configuration is wrong. Domain errors (`tools.core.errors`) become a message and
their exit code here, and only here; `--debug` (before or after the command) shows the
traceback.

Each command is a module of this package with `register(sub)`, which adds its parser and sets
its `handler`; this module imports them, they never import it. It imports them, and whatever
else loads torch, inside its functions: `--version` answers without torch (0.1 s, not 4 s).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

BENCH_LIKE = frozenset({"bench", "dataset"})
"""Commands whose SIGINT lets the running candidates finish (a grace period) instead of killing
their jobs at once (`agent.interrupt`)."""


def command_modules() -> tuple[ModuleType, ...]:
    """One module per command, in the order `--help` lists them."""
    from agent.cli import bench, dataset, optimize, profile, serve, verify

    return (verify, optimize, profile, bench, serve, dataset)


def asks_for_version(argv: Sequence[str]) -> bool:
    """Whether argparse would answer `--version` (or an abbreviation, `--vers`): it comes
    before the command, after nothing but `--debug`, and before any `--help`."""
    for token in argv:
        if token.startswith("--v") and "--version".startswith(token):
            return True
        if token != "--debug":
            return False
    return False


def build_parser() -> argparse.ArgumentParser:
    from agent.cli.common import Parser
    from agent.version import prog_name, version_line

    parser = Parser(
        prog=prog_name(), description="Turn PyTorch modules into verified Triton kernels."
    )
    parser.add_argument("--version", action="version", version=version_line())
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module in command_modules():
        module.register(sub)
    for name, p in sub.choices.items():
        p.prog = f"{parser.prog} {name}"
        # `--debug` after the command too; SUPPRESS keeps one given before it
        p.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code. `argv` None: the program itself (`python -m agent`, the
    `triton-agent` script), whose exit a late Ctrl-C no longer turns into 130 once the command
    has finished (`agent.interrupt.ignore_sigint_while_exiting`)."""
    if asks_for_version(sys.argv[1:] if argv is None else argv):
        from agent.version import version_line

        sys.stdout.write(version_line() + "\n")  # as argparse's action prints it
        return 0
    from agent.interrupt import ignore_sigint_while_exiting

    status = _main(argv)
    if argv is None:
        ignore_sigint_while_exiting()
    return status


def _main(argv: Sequence[str] | None) -> int:
    from rich.markup import escape

    from agent.cli.common import emit_json, err_console
    from agent.interrupt import jobs_stop_on_sigint
    from tools.core.errors import BadInputError, TritonAgentError
    from tools.job.size_guard import ALLOW_LARGE_ENV

    # Job processes are SIGKILLed once their result is in; the resource tracker then reports the
    # semaphores they never released. Nothing leaks past the run: silence that noise.
    if "ignore::UserWarning:multiprocessing.resource_tracker" not in sys.warnoptions:
        sys.warnoptions.append("ignore::UserWarning:multiprocessing.resource_tracker")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors, --help
        return int(exc.code or 0)
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    if getattr(args, "allow_large", False):
        # The jobs inherit this process's environment: the per-launch interpreter limit of the
        # candidate's job (tools.job.size_guard) is lifted with the problem's (VerifyOptions).
        os.environ[ALLOW_LARGE_ENV] = "1"
    try:
        if args.command in BENCH_LIKE:
            return args.handler(args)
        with jobs_stop_on_sigint():
            return args.handler(args)
    except TritonAgentError as exc:
        if args.debug:
            err_console.print_exception()
        kind = "bad input" if isinstance(exc, BadInputError) else "error"
        err_console.print(f"[bold red]{kind}:[/bold red] " + escape(str(exc)))
        if getattr(args, "json", False):
            emit_json(
                {
                    "status": "bad_input" if isinstance(exc, BadInputError) else "error",
                    "message": str(exc),
                    "exit_code": exc.exit_code,
                }
            )
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
