"""`python -m agent optimize` and `python -m agent repair`."""

from __future__ import annotations

import argparse
from typing import Any

from rich.markup import escape
from rich.table import Table

from agent.cli import COMMANDS, add_verify_options, emit_json, err_console, verify_config_kwargs
from agent.config import AgentConfig
from tools.evaluate import BASELINES, DEFAULT_BASELINE

STATUS_STYLE = {"ok": "green", "slower": "yellow"}


def add_backend_options(p: argparse.ArgumentParser) -> None:
    """Backend and sampling flags (optimize, repair, bench, repl)."""
    p.add_argument(
        "--backend",
        default="auto",
        choices=["auto", "compiler", "openai", "vllm", "hf", "replay"],
        help="auto: replay if --replies, openai if --base-url, hf if --model is a local dir, else compiler",
    )
    p.add_argument(
        "--model",
        default=None,
        help="model name or local path (default facebook/KernelLLM for LLM backends)",
    )
    p.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"
    )
    p.add_argument("--api-key", default=None, help="API key (default: $OPENAI_API_KEY or EMPTY)")
    p.add_argument(
        "--replies", default=None, help='replay backend: JSONL file, one {"text": ...} per line'
    )
    p.add_argument("--prompt-format", default="auto", choices=["auto", "completion", "chat"])
    p.add_argument(
        "--prompt-template",
        default=None,
        help="custom first-round template file ($problem placeholder)",
    )
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=0.97)
    p.add_argument("--max-tokens", type=int, default=4096)


def add_loop_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--budget", type=int, default=20, help="candidate kernels to evaluate (default 20)"
    )
    p.add_argument(
        "--samples-per-round",
        type=int,
        default=1,
        help="candidates drafted and evaluated in parallel per round",
    )
    add_backend_options(p)
    p.add_argument(
        "--no-compiler-seed",
        action="store_true",
        help="do not evaluate torch.compile's Triton as attempt 0",
    )
    p.add_argument("--no-tune", action="store_true", help="skip the launch-parameter tuner (GPU)")
    p.add_argument("--target-speedup", type=float, default=1.0)
    p.add_argument(
        "--baseline",
        default=DEFAULT_BASELINE,
        choices=BASELINES,
        help="the bar a kernel must beat: best = the faster of eager and torch.compile (default)",
    )
    p.add_argument("--time-limit", type=float, default=None, help="seconds for the whole run")
    p.add_argument("--runs-dir", default=None, help="where run directories go (default ./runs)")
    p.add_argument("--run-id", default=None)
    p.add_argument(
        "--json", action="store_true", help="print the result as JSON (last line of stdout)"
    )


def backend_config_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The backend and sampling flags as AgentConfig keyword arguments (optimize, repair, bench)."""
    kw: dict[str, Any] = dict(
        backend=args.backend,
        api_key=args.api_key,
        replies=args.replies,
        prompt_format=args.prompt_format,
        prompt_template=args.prompt_template,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
    )
    if args.model:
        kw["model"] = args.model
    if args.base_url:
        kw["base_url"] = args.base_url
    return kw


def config_from(args: argparse.Namespace) -> AgentConfig:
    kw: dict[str, Any] = dict(
        budget=args.budget,
        samples_per_round=args.samples_per_round,
        compiler_seed=not args.no_compiler_seed,
        tune=not args.no_tune,
        target_speedup=args.target_speedup,
        baseline=args.baseline,
        time_limit_s=args.time_limit,
        run_id=args.run_id,
        **backend_config_kwargs(args),
        **verify_config_kwargs(args),
    )
    if args.runs_dir:
        kw["runs_dir"] = args.runs_dir
    return AgentConfig(**kw)


class Progress:
    """Live progress on stderr: one line per event."""

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "start":
            src = e.get("backend")
            err_console.print(
                f"run [bold]{e['run_id']}[/bold] on {e['device']} with "
                f"{'the compiler drafter (no model configured)' if src == 'compiler' else 'backend ' + str(src)}"
                f" -> {e['run_dir']}"
            )
        elif kind == "resume":
            err_console.print(
                f"resuming: {e.get('attempts', 0)} attempts already evaluated"
                + (f"; {e['message']}" if e.get("message") else "")
            )
        elif kind == "drafting":
            what = (
                "compiler (torch.compile -> Triton)"
                if e["source"] == "compiler"
                else f"{e.get('samples', 1)} LLM sample(s)"
            )
            err_console.print(f"round {e['round']}: drafting {what} ...")
        elif kind == "attempt":
            a = e["attempt"]
            style = STATUS_STYLE.get(a["status"], "red")
            err_console.print(
                f"  attempt {a['index']:>2} [{style}]{a['status']:<14}[/{style}] {escape(a['summary'][:140])}"
            )
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
            escape((a.get("summary") or "")[:90]),
        )
    err_console.print(table)
    if result["correct"]:
        timing = (
            "" if result["timed"] else " (CPU: verified under the Triton interpreter, not timed)"
        )
        err_console.print(f"[bold green]best kernel:[/bold green] {result['best_kernel']}{timing}")
    else:
        err_console.print(
            f"[bold red]no correct kernel[/bold red]; every attempt is under {result['run_dir']}/attempts"
        )


def cmd_run(args: argparse.Namespace) -> int:
    """`optimize`, and `repair` (`args.mode`), which starts from `args.kernel`."""
    from agent.kernelbench_io import resolve_cli
    from agent.runner import run

    picked = resolve_cli(args, one=True)
    if picked is not None:
        args.problem = str(picked[0])
    config = config_from(args)
    result = run(
        args.problem,
        config,
        resume=args.resume,
        on_event=Progress(),
        start_kernel=args.kernel,
        mode=args.mode,
    )
    print_table(result)
    if args.json:
        emit_json(result)
    return 0 if result["status"] == "ok" else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="draft, verify and refine Triton kernels for a problem")
    p.add_argument("problem", nargs="?", help="problem .py file (KernelBench format)")
    p.add_argument("--resume", default=None, metavar="RUN_ID", help="continue a killed run")
    add_loop_options(p)
    add_verify_options(p)
    from agent.kernelbench_io import add_cli_options

    add_cli_options(p, export=False)
    p.set_defaults(mode="optimize", kernel=None)
    COMMANDS["optimize"] = cmd_run

    p = sub.add_parser("repair", help="start from a failing kernel and repair it")
    p.add_argument("problem", nargs="?", help="problem .py file")
    p.add_argument("kernel", nargs="?", help="the failing candidate .py file (not with --resume)")
    p.add_argument("--resume", default=None, metavar="RUN_ID")
    add_loop_options(p)
    add_verify_options(p)
    p.set_defaults(mode="repair")
    COMMANDS["repair"] = cmd_run
