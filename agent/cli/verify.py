"""`python -m agent verify PROBLEM.py KERNEL.py`: check a candidate against a problem."""

from __future__ import annotations

import argparse
from typing import Any

from agent.cli.common import emit_json, err_console, print_verdict, verify_options_from
from agent.options import add_options
from tools.core.errors import BadInputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check a candidate kernel against a problem")
    p.add_argument("problem", help="problem .py file (KernelBench format)")
    p.add_argument("kernel", help="candidate .py file defining ModelNew")
    p.add_argument(
        "--json", action="store_true", help="print the verdict as JSON (last line of stdout)"
    )
    p.add_argument(
        "--sanitize",
        action="store_true",
        help="GPU only: one more trial under compute-sanitizer (memcheck, racecheck)",
    )
    add_options(p, "verify")
    p.set_defaults(handler=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from agent.evaluation import make_verifier, verify_candidate
    from tools.core.problem import read_kernel, read_problem

    problem = read_problem(args.problem)
    source = read_kernel(args.kernel)
    options = verify_options_from(args)
    verifier = make_verifier(options)
    if getattr(args, "sanitize", False) and verifier.device != "cuda":
        raise BadInputError(
            "--sanitize needs a GPU (compute-sanitizer checks CUDA kernels); on the CPU every "
            "verification already runs the interpreter's cross-program race check"
        )
    with err_console.status(f"verifying {args.kernel} on {verifier.device} ..."):
        verdict = verify_candidate(verifier, problem, source, args.kernel)
    if getattr(args, "sanitize", False) and verdict.correct:
        from tools.orchestrate import sanitize

        with err_console.status("one more trial under compute-sanitizer ..."):
            runs = sanitize.run_sanitizer(
                args.problem, source, seed=options.seed, precision=options.precision
            )
        verdict = sanitize.apply(verdict, runs)
    print_verdict(verdict)
    if args.json:
        emit_json(verdict.to_dict())
    return exit_code(verdict)


def exit_code(verdict: Any) -> int:
    """0 correct; 2 when the input itself is unusable (`bad_input`: an empty kernel, no
    `ModelNew`); 1 for any other failure of the candidate."""
    if verdict.correct:
        return 0
    return 2 if verdict.status == "bad_input" else 1
