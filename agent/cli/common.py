"""`python -m agent <command>`: the command-line boundary.

Conventions (DESIGN.md): with `--json` the last line of stdout is one JSON object; progress and
logs go to stderr. Exit 0 = the command achieved its aim, 1 = it ran but did not, 2 = bad input or
usage. Domain errors (`tools.errors`) become a message and their exit code here, and only here;
`--debug` shows the traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape

from tools.errors import BadInputError, TritonAgentError
from tools.results import strict_json

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; make the message ours."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        err_console.print(f"[red]error:[/red] {message}")
        raise SystemExit(2)


def emit_json(obj: dict[str, Any]) -> None:
    """The machine-readable result: one line of strict JSON, the last on stdout."""
    sys.stdout.write(strict_json(obj) + "\n")
    sys.stdout.flush()


def add_verify_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trials", type=int, default=5, help="random input sets to compare (default 5)")
    p.add_argument(
        "--atol", type=float, default=None, help="absolute tolerance (default per dtype)"
    )
    p.add_argument(
        "--rtol", type=float, default=None, help="relative tolerance (default per dtype)"
    )
    p.add_argument(
        "--tolerance-preset",
        default="default",
        choices=["default", "kernelbench-v0"],
        help="default: fp32 1e-4, fp16/bf16 1e-2; kernelbench-v0: 1e-2 for everything",
    )
    p.add_argument(
        "--policy",
        default="strict",
        choices=["strict", "allow-library"],
        help="strict: all compute in Triton; allow-library: library matmul/conv calls allowed (mixed)",
    )
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument(
        "--timeout", type=float, default=180.0, help="seconds per candidate job (default 180)"
    )
    p.add_argument(
        "--target",
        default="sm_90",
        help="on CPU, also compile kernels ahead of time for this CUDA target (default sm_90; 'none' to skip)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--allow-large",
        action="store_true",
        help="run problems the CPU interpreter would take very long on, instead of refusing them",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="host memory limit of each verification job in MB (default: derived from the "
        "problem's measured footprint, at least 8192)",
    )
    p.add_argument(
        "--generalize",
        action="store_true",
        help="also verify with the problem's size constants changed (catches hard-coded shapes)",
    )
    p.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        help="GPU: verification jobs at once per GPU (default 1); timing always has its GPU alone",
    )


def verify_config_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The verification flags as AgentConfig keyword arguments (optimize, repair, bench)."""
    target = None if str(args.target).lower() in ("none", "", "off") else args.target
    return dict(
        trials=args.trials,
        seed=args.seed,
        atol=args.atol,
        rtol=args.rtol,
        tolerance_preset=args.tolerance_preset,
        policy=args.policy,
        device=args.device,
        timeout_s=args.timeout,
        aot_target=target,
        allow_large=args.allow_large,
        memory_mb=args.memory_mb,
        generalize=args.generalize,
        jobs_per_gpu=args.jobs_per_gpu,
    )


def verify_options_from(args: argparse.Namespace):
    """VerifyOptions from the verification flags (verify, profile, dataset)."""
    from agent.config import AgentConfig

    return AgentConfig(**verify_config_kwargs(args)).verify_options()


def build_parser() -> argparse.ArgumentParser:
    from agent.version import package_version, prog_name

    parser = _Parser(
        prog=prog_name(), description="Turn PyTorch modules into verified Triton kernels."
    )
    parser.add_argument("--version", action="version", version=f"triton-agent {package_version()}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("verify", help="check a candidate kernel against a problem")
    p.add_argument("problem", help="problem .py file (KernelBench format)")
    p.add_argument("kernel", help="candidate .py file defining ModelNew")
    p.add_argument(
        "--json", action="store_true", help="print the verdict as JSON (last line of stdout)"
    )
    add_verify_options(p)

    from agent import commands

    commands.register(sub)
    return parser


def cmd_verify(args: argparse.Namespace) -> int:
    from tools.problem import read_kernel, read_problem
    from tools.verify import Verifier

    problem = read_problem(args.problem)
    source = read_kernel(args.kernel)
    options = verify_options_from(args)
    verifier = Verifier(options)
    with err_console.status(f"verifying {args.kernel} on {verifier.device} ..."):
        verdict = verifier.verify(problem, source, args.kernel)
    print_verdict(verdict)
    if args.json:
        emit_json(verdict.to_dict())
    return 0 if verdict.correct else 1


def print_verdict(verdict) -> None:
    style = "green" if verdict.correct else "red"
    where = "CPU (Triton interpreter)" if verdict.device == "cpu" else verdict.device
    err_console.print(
        f"[bold {style}]{verdict.status}[/bold {style}] ({where}, {verdict.duration_s:.1f} s)"
    )
    err_console.print(verdict.feedback(), markup=False)


COMMANDS["verify"] = cmd_verify


def main(argv: Sequence[str] | None = None) -> int:
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
    handler = COMMANDS[args.command]
    try:
        return handler(args)
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
