"""`python -m agent profile PROBLEM.py KERNEL.py`: verify, then time on the GPU.

Exit 0 when the kernel is correct and faster than the chosen baseline; 1 otherwise (slower,
noisy, not verified, or no GPU: `unavailable`); 2 for bad input.
"""

from __future__ import annotations

import argparse

from agent.cli.common import emit_json, err_console, verify_options_from
from agent.options import add_options


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile", help="verify a kernel, then time it against eager and torch.compile"
    )
    p.add_argument("problem", help="problem .py file (KernelBench format)")
    p.add_argument("kernel", help="candidate .py file defining ModelNew")
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON (last line of stdout)"
    )
    add_options(p, "bar")  # --baseline: the bar for exit code 0 (all speedups are reported)
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    p.add_argument("--refresh-baselines", action="store_true", help="re-time cached baselines")
    p.add_argument(
        "--trace",
        default=None,
        metavar="FILE",
        help="write the profiler pass of the timed candidate as a Chrome/Perfetto trace (JSON; "
        "open in ui.perfetto.dev or chrome://tracing)",
    )
    p.add_argument(
        "--protocol",
        default="ours",
        choices=["ours", "kernelbench"],
        help="kernelbench: also time eager and the candidate with KernelBench's method "
        "(3 warm-up calls, 100 CUDA-event trials, mean and std), beside ours",
    )
    add_options(p, "verify")
    p.set_defaults(handler=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from agent.evaluation import make_verifier, profile_candidate
    from tools.core.problem import read_kernel, read_problem
    from tools.orchestrate.profile import ProfileOptions

    problem = read_problem(args.problem)
    source = read_kernel(args.kernel)
    options = ProfileOptions(
        baseline=args.baseline,
        compile_baseline=not args.no_compile,
        refresh_baselines=args.refresh_baselines,
        kernelbench=args.protocol == "kernelbench",
        trace=bool(args.trace),
    )
    verifier = make_verifier(verify_options_from(args))
    with err_console.status(f"verifying and profiling {args.kernel} on {verifier.device} ..."):
        result = profile_candidate(verifier, problem, source, args.kernel, options)
    print_profile(result)
    if args.trace:
        if result.write_trace(args.trace):
            err_console.print(f"trace: {args.trace} (open in ui.perfetto.dev or chrome://tracing)")
        else:
            err_console.print("[yellow]no trace:[/yellow] the candidate was not profiled on a GPU")
    if args.json:
        emit_json(result.to_dict())
    if result.status == "ok":
        return 0
    bad = result.verdict is not None and result.verdict.status == "bad_input"
    return 2 if bad else 1


def print_profile(r) -> None:
    from rich.table import Table

    from tools.checks.roofline import format_ms, format_speedup

    style = {"ok": "green", "slower": "yellow", "noisy": "yellow"}.get(r.status, "red")
    err_console.print(f"[bold {style}]{r.status}[/bold {style}] ({r.device}, {r.duration_s:.1f} s)")
    if r.candidate is not None:
        t = Table(title=f"{r.problem} / {r.kernel}", title_justify="left")
        for col in ("", "median", "p20-p80", "IQR", "n", "speedup [p20/p80 range]"):
            t.add_column(col, justify="right" if col else "left")

        def row(label, s, sp) -> None:
            if s is not None:
                t.add_row(
                    label,
                    format_ms(s.median_ms),
                    f"{format_ms(s.p20_ms)}-{format_ms(s.p80_ms)}",
                    format_ms(s.iqr_ms),
                    str(s.n),
                    format_speedup(sp) if sp else "",
                )

        row("eager" + (" (cached)" if r.baselines_cached else ""), r.eager, None)
        row("torch.compile" + (" (cached)" if r.baselines_cached else ""), r.compiled, None)
        for i, s in enumerate(r.candidate_runs):
            row(f"candidate run {i + 1}", s, None)
        row("candidate vs eager", r.candidate, r.speedup_eager)
        row("candidate vs compile", r.candidate, r.speedup_compile)
        if r.eager_fp32 is not None:  # eager ran cuDNN in TF32: the same eager at full fp32
            row("eager, TF32 off", r.eager_fp32, None)
            row("candidate vs eager, TF32 off", r.candidate, r.speedup_eager_fp32)
        if r.eager_cudnn_benchmark is not None:  # what a user tuning convolutions sets
            row("eager, cudnn.benchmark", r.eager_cudnn_benchmark, None)
            row("candidate vs eager, cudnn.benchmark", r.candidate, r.speedup_eager_cudnn_benchmark)
        err_console.print(t)
    kb = r.kernelbench
    if kb and kb.get("candidate"):
        e, c = kb.get("eager") or {}, kb["candidate"]
        sp = f"{kb['speedup']:.2f}x" if kb.get("speedup") else "-"
        err_console.print(
            f"KernelBench timing (mean ± std of {c.get('num_trials')}): candidate "
            f"{c['mean']:.4f} ± {c['std']:.4f} ms, eager {e.get('mean', float('nan')):.4f} ± "
            f"{e.get('std', float('nan')):.4f} ms, speedup {sp}"
        )
    err_console.print(r.feedback(), markup=False)
