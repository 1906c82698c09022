"""`python -m agent dataset build|stats` and `python -m agent train`."""

from __future__ import annotations

import argparse
from typing import Any

from agent.cli.common import clip, emit_json, err_console, verify_options_from
from agent.options import add_options


def register(sub: argparse._SubParsersAction) -> None:
    """`dataset build`, `dataset stats` and `train`."""
    p = sub.add_parser(
        "dataset", help="build verified (PyTorch, Triton) pairs for fine-tuning; count them"
    )
    dsub = p.add_subparsers(dest="dataset_command", metavar="SUBCOMMAND", parser_class=type(p))

    _register_build(dsub)
    _register_stats(dsub)
    p.set_defaults(dataset_parser=p)
    p.set_defaults(handler=cmd_dataset)
    _register_train(sub)


def _register_build(dsub: argparse._SubParsersAction) -> None:
    """`dataset build SOURCE... --out PAIRS`: its own flags and the table's verify options."""
    b = dsub.add_parser(
        "build",
        help="verify the kernels of problem folders, module folders, kernel "
        "folders and run directories; append the verified pairs to --out",
    )
    b.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="a folder of problems, modules (+ input recipe) or kernels; a run directory "
        "or a folder of runs; a .py file",
    )
    b.add_argument("--out", required=True, help="pairs JSONL file (appended to; a rerun resumes)")
    b.add_argument(
        "--problems",
        default=None,
        metavar="DIR",
        help="where kernels-folder files find their problem (default: ../problems, then the same folder)",
    )
    b.add_argument(
        "--repo-name", default=None, help="the records' repo_name (default: the problem's folder)"
    )
    b.add_argument(
        "--license", default="unknown", help="SPDX license of the PyTorch code (default unknown)"
    )
    b.add_argument(
        "--jobs", type=int, default=None, help="items in flight (default: the sandbox's slots)"
    )
    b.add_argument(
        "--profile",
        default="auto",
        choices=["auto", "on", "off"],
        help="time admitted kernels (GPU only; auto = when a GPU is present)",
    )
    b.add_argument(
        "--save-to-disk",
        default=None,
        metavar="DIR",
        help="also write the pairs as a `datasets` dataset (KernelBook's columns, the loop's "
        "prompt/completion) with save_to_disk (needs the train extra)",
    )
    b.add_argument(
        "--json", action="store_true", help="print the summary as JSON (last line of stdout)"
    )
    add_options(b, "verify")


def _register_stats(dsub: argparse._SubParsersAction) -> None:
    """`dataset stats PAIRS`."""
    s = dsub.add_parser("stats", help="count the pairs by source, op family and outcome")
    s.add_argument("pairs", help="pairs JSONL file")
    s.add_argument("--plot", default=None, metavar="PNG", help="bar charts (needs matplotlib)")
    s.add_argument(
        "--json", action="store_true", help="print the counts as JSON (last line of stdout)"
    )


def _register_train(sub: argparse._SubParsersAction) -> None:
    """`train PAIRS --base MODEL_DIR --out OUT_DIR` with KernelLLM's recipe as defaults."""
    t = sub.add_parser(
        "train", help="supervised fine-tuning on verified pairs (KernelLLM's recipe)"
    )
    t.add_argument("pairs", help="pairs JSONL file")
    t.add_argument(
        "--base",
        required=True,
        metavar="MODEL_DIR",
        help="base model directory (save_pretrained layout)",
    )
    t.add_argument(
        "--out", required=True, metavar="OUT_DIR", help="where the fine-tuned model is saved"
    )
    t.add_argument("--epochs", type=int, default=10, help="default 10 (KernelLLM)")
    t.add_argument(
        "--batch-size",
        type=int,
        default=32,
        help="examples per optimizer step (default 32, KernelLLM)",
    )
    t.add_argument(
        "--micro-batch-size",
        type=int,
        default=1,
        help="examples per forward pass (gradient accumulation)",
    )
    t.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default 1e-5; 2e-4 with --lora)"
    )
    t.add_argument("--weight-decay", type=float, default=0.0)
    t.add_argument("--warmup-ratio", type=float, default=0.03)
    t.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps")
    t.add_argument(
        "--val-fraction",
        type=float,
        default=0.1,
        help="held out for checkpoint selection by validation perplexity (default 0.1)",
    )
    t.add_argument(
        "--eval-every",
        type=int,
        default=None,
        help="also evaluate every N steps (default: each epoch)",
    )
    t.add_argument(
        "--max-length", type=int, default=8192, help="longer examples are dropped (tokens)"
    )
    t.add_argument(
        "--lora",
        action="store_true",
        help="LoRA adapters (needs peft), merged into the saved model",
    )
    t.add_argument("--lora-r", type=int, default=16)
    t.add_argument("--lora-alpha", type=int, default=32)
    t.add_argument("--lora-dropout", type=float, default=0.05)
    t.add_argument("--device", default=None, help="default cuda when available, else cpu")
    t.add_argument(
        "--dtype", default=None, help="torch dtype name (default bfloat16 on CUDA, float32 on CPU)"
    )
    t.add_argument("--gradient-checkpointing", action="store_true")
    add_options(t, names=("prompt_template",))  # the loop's, if it used one
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--json", action="store_true", help="print the result as JSON (last line of stdout)"
    )
    t.set_defaults(handler=cmd_train)


def cmd_dataset(args: argparse.Namespace) -> int:
    if args.dataset_command == "build":
        return _build(args)
    if args.dataset_command == "stats":
        return _stats(args)
    args.dataset_parser.print_help()
    return 2


class BuildProgress:
    def __call__(self, e: dict[str, Any]) -> None:
        from rich.markup import escape

        kind = e["event"]
        if kind == "start":
            err_console.print(
                f"dataset build on {e['device']}: {e['items']} items, {e['todo']} to do "
                f"-> {e['out']}"
            )
        elif kind == "skipped":
            err_console.print(f"[dim]skipped: {escape(e['message'])}[/dim]")
        elif kind == "item":
            style = {"ok": "green", "duplicate": "dim"}.get(e["status"], "red")
            msg = (
                f" {escape(clip(e['message'], 120))}"
                if e["status"] not in ("ok",) and e["message"]
                else ""
            )
            err_console.print(
                f"  [{style}]{e['status']:<14}[/{style}] {escape(e['origin'])} ({e['source']}){msg}"
            )


def _build(args: argparse.Namespace) -> int:
    from agent.dataset import build
    from agent.evaluation import make_verifier

    verifier = make_verifier(verify_options_from(args))
    profile = {"auto": None, "on": True, "off": False}[args.profile]
    from agent.progress import live_progress

    with live_progress(BuildProgress(), "dataset", console=err_console) as on_event:
        summary = build(
            args.sources,
            args.out,
            verifier=verifier,
            problems_dir=args.problems,
            repo_name=args.repo_name,
            license=args.license,
            jobs=args.jobs,
            profile=profile,
            on_event=on_event,
        )
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(summary.rejected.items())) or "none"
    err_console.print(
        f"admitted {summary.admitted}, duplicates {summary.duplicates}, rejected: {rejected}, "
        f"retry later {summary.retry_later}, already done {summary.resumed}; "
        f"{summary.records_total} pairs in {summary.out}"
    )
    if args.save_to_disk and summary.records_total > 0:
        from agent.train import save_pairs_dataset

        rows = save_pairs_dataset(summary.out, args.save_to_disk)
        err_console.print(f"datasets dataset of {rows} pairs in {args.save_to_disk}")
    if args.json:
        emit_json(summary.to_dict())
    return 0 if summary.records_total > 0 else 1


def _stats(args: argparse.Namespace) -> int:
    from agent.dataset import plot_stats, stats

    counts = stats(args.pairs)
    err_console.print(
        f"{counts['records']} verified pairs for {counts['problems']} problems in {counts['file']}"
    )
    for title, key in (
        ("source", "by_source"),
        ("op family", "by_op_family"),
        (f"outcome ({counts['status_from']})", "by_status"),
        ("device", "by_device"),
    ):
        err_console.print(
            f"  {title}: " + (", ".join(f"{k} {v}" for k, v in counts[key].items()) or "-")
        )
    if counts["timed"]:
        err_console.print(
            f"  timed: {counts['timed']}, median speedup {counts['median_speedup']:.2f}x"
        )
    if args.plot:
        plot_stats(counts, args.plot)
        err_console.print(f"plot: {args.plot}")
        counts["plot"] = args.plot
    if args.json:
        emit_json(counts)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from agent.train import TrainConfig, train

    config = TrainConfig(
        data=args.pairs,
        base=args.base,
        out=args.out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        micro_batch_size=args.micro_batch_size,
        lr=args.lr,
        weight_decay=args.weight_decay,
        warmup_ratio=args.warmup_ratio,
        max_steps=args.max_steps,
        val_fraction=args.val_fraction,
        eval_every=args.eval_every,
        max_length=args.max_length,
        seed=args.seed,
        lora=args.lora,
        lora_r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        device=args.device,
        dtype=args.dtype,
        gradient_checkpointing=args.gradient_checkpointing,
        prompt_template=args.prompt_template,
    )

    def progress(e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "data":
            err_console.print(
                f"train {e['train']} examples, validate on {e['val']}"
                + (f" ({e['dropped_too_long']} too long, dropped)" if e["dropped_too_long"] else "")
            )
        elif kind == "step":
            err_console.print(
                f"  step {e['step']}/{e['total_steps']} epoch {e['epoch']:.2f} "
                f"loss {e['loss']:.4f} lr {e['lr']:.2e}"
            )
        elif kind == "eval":
            mark = " (best)" if e["best"] else ""
            err_console.print(
                f"  eval at step {e['step']}: val loss {e['val_loss']:.4f}, "
                f"perplexity {e['val_perplexity']:.2f}{mark}"
            )

    result = train(config, on_event=progress)
    where = (
        f"step {result.best['step']} (val perplexity {result.best['val_perplexity']:.2f})"
        if result.best
        else "the last step (no validation split)"
    )
    err_console.print(f"saved {result.out}: the checkpoint of {where}")
    if args.json:
        emit_json(result.to_dict())
    return 0
