"""`python -m agent bench`: pass@k, fast_p and a report over a directory of problems."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape

from agent.cli.common import clip, emit_json, err_console
from agent.options import add_options, config_kwargs
from tools.core.errors import BadInputError


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--k takes integers separated by commas, not {text!r}"
        ) from None
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError("--k takes positive integers, e.g. 1,10,20")
    return ks


BENCH_LOOP_OPTIONS = ("samples_per_round", "compiler_seed", "tune")
"""The loop's options that bench's loop mode takes; its budget is `--samples`."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="pass@k, fast_p and a report over a directory of problems")
    _add_protocol_flags(p)
    _add_run_flags(p)
    add_options(p, "backend", "bar")
    # loop mode's options, the table's (bench has no compiler seed unless asked: `--compiler-seed`)
    add_options(p, names=BENCH_LOOP_OPTIONS, defaults={"compiler_seed": False})
    _add_loop_flags(p)
    add_options(p, "verify")
    from agent.kernelbench_io import add_cli_options

    add_cli_options(p, export=True)
    p.set_defaults(handler=cmd_bench)


def _add_protocol_flags(p: argparse.ArgumentParser) -> None:
    """What is benched and how: the problems, sample or loop mode, N, k, the protocol."""
    p.add_argument(
        "problems", nargs="?", help="directory of problem .py files (KernelBench format)"
    )
    p.add_argument(
        "--mode",
        default="sample",
        choices=["sample", "loop"],
        help="sample: N independent first-round samples per problem (published protocol); "
        "loop: the agent with a budget of N per problem",
    )
    p.add_argument(
        "--samples", type=int, default=20, help="candidates per problem (loop: the budget)"
    )
    p.add_argument(
        "--k",
        type=_ks,
        default=None,
        help="pass@k values, e.g. 1,10,20 (default: those of 1,10,20 not above --samples)",
    )
    p.add_argument(
        "--protocol",
        default="ours",
        choices=["ours", "kernelbench"],
        help="kernelbench: 5 trials, atol=rtol=1e-2, 100 timing trials vs eager",
    )


def _add_run_flags(p: argparse.ArgumentParser) -> None:
    """Where the bench writes, how it runs (threads or Ray), which problems, how it stops."""
    p.add_argument(
        "--out",
        default=None,
        help="output directory (default runs/bench-<timestamp>); "
        "rerunning into an existing one resumes it",
    )
    p.add_argument(
        "--rebuild",
        default=None,
        metavar="OUTDIR",
        help="rebuild the report of OUTDIR from its files",
    )
    p.add_argument(
        "--executor",
        default="thread",
        choices=["thread", "ray"],
        help="thread: one sandbox slot per GPU/core; ray: one task per problem on a Ray cluster",
    )
    p.add_argument(
        "--ray-address", default=None, help="Ray cluster address (default: start a local one)"
    )
    p.add_argument("--only", default=None, help="comma-separated problem names (file stems) to run")
    p.add_argument(
        "--stop-grace",
        type=float,
        default=20.0,
        metavar="S",
        help="on SIGINT: seconds the running candidates may take to finish before their jobs "
        "are killed and the report of what is done is written (default 20)",
    )


def _add_loop_flags(p: argparse.ArgumentParser) -> None:
    """Loop mode's concurrency, and the JSON report."""
    p.add_argument(
        "--loop-jobs",
        type=int,
        default=None,
        metavar="N",
        help="loop mode, thread executor: problems whose loops run at once (default: the number "
        "of verification slots, e.g. GPUs x --jobs-per-gpu; 1 with --replies, whose replies are "
        "taken in order). All loops share one set of slots: no more verification or timing jobs "
        "run at once than in sample mode, and a timing job still has its GPU alone",
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON (last line of stdout)"
    )


def bench_config(args: argparse.Namespace) -> Any:
    from agent.bench import BenchConfig, default_out
    from agent.config import AgentConfig

    kw: dict[str, Any] = dict(
        budget=args.samples, **config_kwargs(args, "loop", "backend", "bar", "verify")
    )
    if args.samples < 1:
        raise BadInputError("--samples must be at least 1")
    return BenchConfig(
        mode=args.mode,
        samples=args.samples,
        ks=args.k,
        protocol=args.protocol,
        executor=args.executor,
        ray_address=args.ray_address,
        out=args.out or default_out(),
        only=tuple(x.strip() for x in args.only.split(",") if x.strip()) if args.only else (),
        compiler_seed=args.compiler_seed,
        loop_jobs=args.loop_jobs,
        stop_grace_s=args.stop_grace,
        agent=AgentConfig(**kw),
    )


class BenchProgress:
    """One line per event on stderr."""

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "start":
            loops = f", {e['loops']} problem loop(s) at once" if e.get("loops") else ""
            err_console.print(
                f"evaluating on {e['device']} with {e['slots']} parallel slot(s){loops}"
            )
        elif kind == "problem" and e["done"]:
            err_console.print(f"{e['problem']}: {e['done']} done already, {e['todo']} to do")
        elif kind == "drafting":
            err_console.print(f"{e['problem']}: drafting {e['samples']} candidate(s) ...")
        elif kind == "sample":
            r = e["record"]
            style = "green" if r["correct"] else "red"
            err_console.print(
                f"  {r['problem']}/{r['sample']:02d} [{style}]{r['status']:<14}[/{style}] "
                f"{escape(clip(r['summary'], 120))}"
            )
        elif kind == "error":
            err_console.print(
                f"[yellow]{escape(e['problem'])}:[/yellow] {escape(str(e['message']))}"
            )
        elif kind == "stopping" and e.get("loops"):
            err_console.print(
                f"[yellow]interrupted:[/yellow] stopping {e['running']} running loop(s) (their "
                "jobs are killed; those problems start over on resume)"
            )
        elif kind == "stopping":
            err_console.print(
                f"[yellow]interrupted:[/yellow] {e['running']} candidate(s) running get "
                f"{e['grace_s']:g} s to finish, then their jobs are killed"
            )
        elif kind == "interrupted":
            err_console.print("[yellow]interrupted:[/yellow] writing the report of what is done")


def print_summary(r: dict[str, Any]) -> None:
    from agent.bench.headline import console_line

    m = r["metrics"]
    label = "success@k" if r["settings"]["mode"] == "loop" else "pass@k"
    pk = ", ".join(
        f"@{k} {'-' if v is None else f'{100 * v:.1f}%'}" for k, v in m["pass_at_k"].items()
    )
    fp = ", ".join(
        f"fast_{p} {'-' if v is None else f'{100 * v:.1f}%'}" for p, v in m["fast_p"].items()
    )
    err_console.print(f"[bold]{label}[/bold] {pk}; {fp}")
    g = m["geomean_speedup"]
    if g["eager"]["value"] or g["compile"]["value"]:
        err_console.print(
            "geomean speedup: "
            + ", ".join(
                f"{v['value']:.2f}x over {k} ({v['problems']} problems)"
                for k, v in g.items()
                if v["value"]
            )
        )
    headline = console_line(m.get("headline"))
    if headline:
        err_console.print(headline)
    err_console.print(
        "problems: "
        + ", ".join(f"{k} {v}" for k, v in m["outcomes"].items())
        + f" (no verdict yet: {r['totals']['no_verdict']})"
    )
    t = m["time_per_problem_s"]
    if t["median"] is not None:
        mem = m["peak_memory_mb"]
        peaks = "".join(
            f", peak {label} memory median {v['median']:.0f} MB (max {v['max']:.0f})"
            for label, v in (("host", mem["host"]), ("GPU", mem["gpu"]))
            if v["median"] is not None
        )
        err_console.print(
            f"time per problem: median {t['median']:.1f} s, p90 {t['p90']:.1f} s{peaks}"
        )
    for n in r["notes"]:
        err_console.print(f"[yellow]note:[/yellow] {escape(n)}")
    err_console.print(f"report: {r['out']}/report.md")


def cmd_bench(args: argparse.Namespace) -> int:
    from agent import kernelbench_io
    from agent.bench import rebuild_report, run_bench

    picked = kernelbench_io.resolve_cli(args)
    if picked is not None:  # a KernelBench level folder, only the ids asked for
        args.problems = str(picked[0].parent)
        args.only = ",".join(f.stem for f in picked)
    if args.rebuild:
        report = rebuild_report(args.rebuild)
    else:
        if not args.problems:
            raise BadInputError("a problem directory is required (or --rebuild OUTDIR)")
        cfg = bench_config(args)
        err_console.print(f"bench -> {cfg.out}")
        from agent.progress import live_progress

        kind = "bench" if cfg.mode == "sample" else "bench-loop"
        with live_progress(BenchProgress(), kind, console=err_console) as on_event:
            report = run_bench(args.problems, cfg, on_event=on_event)
    print_summary(report)
    if args.export_kernelbench:
        done = kernelbench_io.export_run(
            report["out"], args.export_kernelbench, args.level, checker=args.kernelbench_checker
        )
        report["kernelbench_export"] = done.to_dict()
        err_console.print(
            f"KernelBench layout: {done.kernels} kernel(s) of {done.problems} problem(s) in "
            f"{done.run_dir} (our verdicts: {kernelbench_io.RESULTS_NAME}); KernelBench's judge "
            "would accept {yes}, refuse {no}, unknown {unknown} "
            "({name})".format(**done.acceptance, name=kernelbench_io.ACCEPTANCE_NAME)
        )
    if args.json:
        emit_json(report)
    if report["status"] == "ok":
        return 0
    refused = None if args.rebuild else refused_input(report, cfg)
    if refused is not None:
        err_console.print(f"[bold red]bad input:[/bold red] {escape(str(refused))}")
        return refused.exit_code
    return 1


def refused_input(report: dict[str, Any], cfg: Any) -> BadInputError | None:
    """The first problem's refusal when no problem of the bench could run and each was refused
    as bad input (too large for the CPU interpreter, not a KernelBench problem): the bench then
    exits 2, as `optimize` does for the same problem (issue 38). None when some problem ran
    or one failed otherwise (a backend that cannot be reached, a reference that does not fit
    in a job's memory): exit 1. The bench keeps its errors as text, so each is checked again
    (one problem job each, only on this path; the bench's own check of a good problem is cached)."""
    import json
    from pathlib import Path

    from agent.evaluation import make_verifier
    from tools.core.errors import TritonAgentError
    from tools.core.problem import read_problem

    rows = report.get("problems") or []
    if not rows or any(r["n"] or not r["error"] for r in rows):
        return None
    verifier = make_verifier(cfg.verify_options())
    first: BadInputError | None = None
    for row in rows:
        meta = json.loads((Path(report["out"]) / row["problem"] / "problem.json").read_text())
        try:
            verifier.reference(read_problem(meta["path"]))
        except BadInputError as exc:
            first = first or exc
            continue
        except TritonAgentError:
            return None
        return None  # it runs now: not the input's fault
    return first
