"""`python -m agent repl`: paste a PyTorch module, press Ctrl-D, see the draft and its verdict.

Each pasted module becomes a problem file (under `<runs-dir>/inputs/`) and one run of the loop
with the configured backend: the LLM's draft when a model is configured (its first prompt is the
pasted code), else the compiler's (torch.compile's Triton). `--budget` (default 1 here) lets the
loop refine a failing draft. Every draft is printed with its verdict as soon as it is verified;
the backends return whole replies, so a draft is shown when it is complete, not streamed.

A plain `nn.Module` is accepted when it is the only module class and the paste has
`get_inputs()` and `get_init_inputs()`: it is aliased to `Model`. Without those two functions
nothing can be verified, so the REPL says what is missing instead of guessing inputs.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import io
import sys
import tokenize
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from tools.core import pyast
from tools.core.errors import TritonAgentError

BANNER = (
    "Paste a PyTorch module (KernelBench format: class Model, get_inputs(), get_init_inputs()),\n"
    "then press Ctrl-D on an empty line. Ctrl-D on an empty buffer exits; Ctrl-C clears the buffer."
)
STATUS_STYLE = {"ok": "green", "slower": "yellow"}


def read_module(stream: TextIO = sys.stdin, prompt: str = ">>> ") -> str | None:
    """Lines until end-of-file (Ctrl-D); None when end-of-file comes on an empty buffer."""
    lines: list[str] = []
    first = True
    while True:
        try:
            if stream is sys.stdin:
                line = input(prompt if first else "") + "\n"
            else:
                line = stream.readline()
                if not line:
                    raise EOFError
        except EOFError:
            break
        first = False
        lines.append(line)
    text = "".join(lines)
    return text if text.strip() else None


def as_problem(text: str) -> tuple[str | None, str]:
    """(problem source, note) for pasted code; source None with the reason when it cannot be one."""
    try:
        tree = pyast.parse(text)
    except SyntaxError as exc:
        return None, f"the pasted code does not parse: {exc.msg} (line {exc.lineno})"
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [f for f in ("get_inputs", "get_init_inputs") if f not in names]
    if missing:
        return None, (
            f"no {' or '.join(m + '()' for m in missing)}: add `get_inputs()` (a list of input tensors) and "
            "`get_init_inputs()` (the constructor's arguments) so the draft can be verified"
        )
    if "Model" in names:
        return text, ""
    modules = [
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any("Module" in ast.unparse(b) for b in n.bases)
    ]
    if len(modules) != 1:
        return (
            None,
            "no `class Model(nn.Module)`, and not exactly one nn.Module class to use instead",
        )
    # The class itself renamed (every use of its name, as a name, not in strings), not
    # `class Model(Net): pass` nor `Net = Model`: the compiler drafter reads Model's own
    # `forward` from the source, and copies the file's other statements into its draft.
    return _renamed(text, modules[0], "Model"), f"using `{modules[0]}` as Model"


def _renamed(text: str, old: str, new: str) -> str:
    """`text` with every name `old` replaced by `new` (not attributes, strings or comments)."""
    lines = text.splitlines(keepends=True)
    edits, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and tok.string == old and prev != ".":
            edits.append(tok.start)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok.string
    for row, col in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old) :]
    return "".join(lines)


class Printer:
    """Shows loop events: each draft (code) and its verdict."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, e: dict[str, Any]) -> None:
        kind = e["event"]
        if kind == "drafting":
            what = (
                "the compiler (torch.compile -> Triton)" if e["source"] == "compiler" else "the LLM"
            )
            self.console.print(f"[dim]round {e['round']}: drafting with {what} ...[/dim]")
        elif kind == "attempt":
            a = e["attempt"]
            if a.get("code"):
                self.console.print(f"[bold]draft {a['index']}[/bold] ({escape(a['source'])}):")
                self.console.print(
                    Syntax(a["code"], "python", theme="ansi_dark", line_numbers=False)
                )
            else:
                self.console.print(f"[bold]draft {a['index']}[/bold]: the reply held no code")
            style = STATUS_STYLE.get(a["status"], "red")
            self.console.print(f"verdict: [bold {style}]{a['status']}[/bold {style}]")
            if not a["correct"] and a.get("feedback"):
                self.console.print(a["feedback"], markup=False, highlight=False)
        elif kind == "evaluating":
            self.console.print(f"[dim]{escape(str(e.get('message')))}[/dim]")
        elif kind in ("error", "warning"):
            self.console.print(f"[yellow]{kind}:[/yellow] {escape(str(e.get('message')))}")


def repl(
    args: argparse.Namespace, *, stdin: TextIO | None = None, console: Console | None = None
) -> int:
    """The read-draft-verify loop; returns the exit code (0 when the user leaves with Ctrl-D)."""
    from agent.api import materialize
    from agent.cli.optimize import config_from
    from agent.interrupt import jobs_stop_on_sigint
    from agent.llm import backend_for
    from agent.runner import run

    console = console or Console(highlight=False, soft_wrap=True)
    stream = stdin or sys.stdin
    config = config_from(args)
    llm = backend_for(config)  # one backend for the session: a replay script goes on in order
    # With a model, show the model's draft (the compiler seed would be attempt 0 otherwise).
    config = dataclasses.replace(config, compiler_seed=llm is None, run_id=None)
    source = (
        "the compiler (no model configured)"
        if llm is None
        else f"backend {getattr(llm, 'name', 'llm')}"
    )
    console.print(f"triton-agent repl: drafting with {source}. {BANNER}")
    printer = Printer(console)
    while True:
        try:
            text = read_module(stream)
        except KeyboardInterrupt:
            console.print("\n[dim](buffer cleared)[/dim]")
            continue
        if text is None:
            console.print("bye")
            return 0
        problem, note = as_problem(text)
        if problem is None:
            console.print(f"[red]cannot use this module:[/red] {escape(note)}")
            continue
        if note:
            console.print(f"[dim]{escape(note)}[/dim]")
        path = materialize(problem, "problem", config.runs_dir)
        try:
            with jobs_stop_on_sigint():
                result = run(path, config, backend=llm, on_event=printer)
        except TritonAgentError as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}")
            continue
        except KeyboardInterrupt:
            console.print("\n[yellow]interrupted[/yellow]")
            continue
        if result["correct"]:
            console.print(f"[green]correct kernel:[/green] {result['best_kernel']}")
        else:
            console.print(f"[red]no correct kernel[/red] ({escape(str(result['stop_reason']))})")
        console.print(f"[dim]run dir: {result['run_dir']}[/dim]")
