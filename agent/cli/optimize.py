"""`python -m agent optimize` and `python -m agent repair`."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agent.cli.common import STATUS_STYLE, clip, emit_json, err_console, table_width
from agent.config import AgentConfig
from agent.options import add_options, config_kwargs
from agent.progress import drafting_what

LOOP_GROUPS = ("loop", "bar", "backend", "verify")
"""The option groups of a loop command (optimize, repair, the REPL)."""


def add_loop_options(p: argparse.ArgumentParser, **defaults: Any) -> None:
    """The loop's flags from the option table, and the run directory's."""
    add_options(p, *LOOP_GROUPS, defaults=defaults)
    p.add_argument("--runs-dir", default=None, help="where run directories go (default ./runs)")
    p.add_argument("--run-id", default=None, help="the run's directory name under --runs-dir")
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON (last line of stdout)"
    )


def config_from(args: argparse.Namespace) -> AgentConfig:
    kw: dict[str, Any] = config_kwargs(args, *LOOP_GROUPS)
    kw["run_id"] = args.run_id
    if args.runs_dir:
        kw["runs_dir"] = args.runs_dir
    return AgentConfig(**kw)


class Progress:
    """Live progress on stderr: one line per event."""

    run_id: str | None = None
    """The run's id, once it started (what `--resume` takes after a Ctrl-C)."""

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "start":
            self.run_id = e.get("run_id")
            src = e.get("backend")
            err_console.print(
                f"run [bold]{e['run_id']}[/bold] on {e['device']} with "
                f"{'the compiler drafter (no model configured)' if src == 'compiler' else 'backend ' + str(src)}"
                f" -> {e['run_dir']}"
            )
        elif kind == "resume":
            n = e.get("attempts", 0)
            if e.get("finished"):
                err_console.print(f"run already finished ({n} attempts): nothing to do")
            else:
                err_console.print(f"resuming: {n} attempts already evaluated")
        elif kind == "drafting":
            err_console.print(f"round {e['round']}: drafting {drafting_what(e)} ...")
        elif kind == "attempt":
            a = e["attempt"]
            style = STATUS_STYLE.get(a["status"], "red")
            err_console.print(
                f"  attempt {a['index']:>2} [{style}]{a['status']:<14}[/{style}] {escape(clip(a['summary'], 140))}"
            )
        elif kind == "evaluating":
            err_console.print(f"  [dim]{escape(str(e.get('message')))}[/dim]")
        elif kind in ("error", "warning"):
            err_console.print(f"[yellow]{kind}:[/yellow] {escape(str(e.get('message')))}")
        elif kind == "finish":
            err_console.print(f"stopped: {escape(str(e.get('stop_reason')))}")


def print_table(result: dict[str, Any]) -> None:
    table = Table(title=f"run {result['run_id']}", show_lines=False)
    for col in ("#", "round", "source", "status", "speedup", "summary"):
        table.add_column(col)
    for a in result["attempts"]:
        style = STATUS_STYLE.get(a["status"], "red")
        sp = f"{a['speedup']:.2f}x" if a.get("speedup") else "-"
        table.add_row(
            str(a["index"]),
            str(a["round"]),
            a["source"],
            f"[{style}]{a['status']}[/{style}]",
            sp,
            escape(clip(a.get("summary") or "", 90)),
        )
    width = table_width()  # its natural width, up to that (off a terminal: wide, not 80)
    (Console(stderr=True, highlight=False, width=width) if width else err_console).print(table)
    if result["correct"]:
        timing = (
            "" if result["timed"] else " (CPU: verified under the Triton interpreter, not timed)"
        )
        err_console.print(f"[bold green]best kernel:[/bold green] {result['best_kernel']}{timing}")
    else:
        where = (
            f"; every attempt is under {result['run_dir']}/attempts"
            if result["attempts"]
            else "; no attempt was evaluated"
        )
        err_console.print(f"[bold red]no correct kernel[/bold red]{where}")


def cmd_run(args: argparse.Namespace) -> int:
    """`optimize`, and `repair` (`args.mode`), which starts from `args.kernel`."""
    from agent.kernelbench_io import resolve_cli
    from agent.runner import run

    picked = resolve_cli(args, one=True)
    if picked is not None:
        args.problem = str(picked[0])
    config = config_from(args)
    from agent.progress import live_progress

    progress = Progress()
    try:
        with live_progress(progress, "optimize", console=err_console, total=config.budget) as ev:
            result = run(
                args.problem,
                config,
                resume=args.resume,
                on_event=ev,
                start_kernel=args.kernel,
                mode=args.mode,
            )
    except KeyboardInterrupt:
        run_id = progress.run_id or args.resume
        if run_id is None:  # before the run directory was made: nothing was saved
            err_console.print(
                "interrupted before the run started: no run directory was made, so there is "
                "nothing to --resume; run the command again"
            )
        else:
            err_console.print(
                "interrupted: every finished attempt is checkpointed; "
                f"continue with --resume {run_id}"
            )
        return 130
    print_table(result)
    if args.json:
        emit_json(result)
    return 0 if result["status"] == "ok" else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="draft, verify and refine Triton kernels for a problem")
    p.add_argument("problem", nargs="?", help="problem .py file (KernelBench format)")
    p.add_argument("--resume", default=None, metavar="RUN_ID", help="continue a killed run")
    add_loop_options(p)
    from agent.kernelbench_io import add_cli_options

    add_cli_options(p, export=False)
    p.set_defaults(mode="optimize", kernel=None, handler=cmd_run)

    p = sub.add_parser("repair", help="start from a failing kernel and repair it")
    p.add_argument("problem", nargs="?", help="problem .py file")
    p.add_argument("kernel", nargs="?", help="the failing candidate .py file (not with --resume)")
    p.add_argument("--resume", default=None, metavar="RUN_ID", help="continue a killed run")
    add_loop_options(p)
    p.set_defaults(mode="repair", handler=cmd_run)
