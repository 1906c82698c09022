"""What every command shares: the consoles, the one JSON line, the parser class, the verdict
printout. Commands import this module; it imports no command."""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

from rich.console import Console

from tools.core.results import strict_json

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

STATUS_STYLE = {"ok": "green", "slower": "yellow"}


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; make the message ours and short: one line
    saying what is wrong and where the usage is, not the full usage of every flag."""

    def error(self, message: str) -> None:  # type: ignore[override]
        err_console.print(f"usage: {self.prog} ... (see `{self.prog} --help`)", markup=False)
        err_console.print(f"[red]error:[/red] {message}")
        raise SystemExit(2)


def emit_json(obj: dict[str, Any]) -> None:
    """The machine-readable result: one line of strict JSON, the last on stdout."""
    sys.stdout.write(strict_json(obj) + "\n")
    sys.stdout.flush()


def verify_options_from(args: argparse.Namespace) -> Any:
    """VerifyOptions from the verification flags (verify, profile, dataset), checked by the
    option table like a run's."""
    from agent.config import AgentConfig
    from agent.options import config_kwargs

    return AgentConfig(**config_kwargs(args, "verify")).verify_options()


def print_verdict(verdict: Any) -> None:
    style = "green" if verdict.correct else "red"
    where = "CPU (Triton interpreter)" if verdict.device == "cpu" else verdict.device
    err_console.print(
        f"[bold {style}]{verdict.status}[/bold {style}] ({where}, {verdict.duration_s:.1f} s)"
    )
    err_console.print(verdict.feedback(), markup=False)


def table_width() -> int | None:
    """Widest a table may be printed: the terminal's, or wide enough not to cut words when
    stderr is not a terminal (a log file, a pipe): rich would otherwise wrap to 80 columns.
    The console's width, not the table's: a forced table width pads every column."""
    if err_console.is_terminal:
        return None
    return max(160, shutil.get_terminal_size((160, 24)).columns)


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters at a word boundary, with "..." when cut (a summary in a
    table or a progress line never ends mid-word)."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[: width - 3].rsplit(" ", 1)[0] if " " in text[: width - 3] else text[: width - 3]
    return cut.rstrip(" ,;:") + "..."
