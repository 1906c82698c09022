"""A live progress bar (count, elapsed, estimate left) over a command's event callback.

On a terminal, `live_progress(printer, kind)` draws a rich progress bar at the bottom of stderr
while the command's own one-line-per-event printer goes on printing above it; in a log (stderr
not a terminal, or TERM=dumb) it is the printer alone, so logs keep plain lines.

What counts, per command (`kind`):
- `bench`: candidates; the total from each problem's `problem` event (done + to do), a step per
  evaluated `sample`. `bench-loop`: problems (a loop's attempts arrive together as it ends), a
  step per problem whose samples arrived.
- `dataset`: items; the total from `start` (`todo`), a step per `item`.
- `optimize`: candidates of the budget; the total given (`total=`), a step per `attempt` that is
  a new draft (the compiler seed and a repair's given kernel are free).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

Event = Callable[[dict[str, Any]], None]
LABELS = {"bench": "candidates", "bench-loop": "problems", "dataset": "items", "optimize": "budget"}


class Bar:
    """Feeds events to `printer`, and moves the bar for the events that count."""

    def __init__(
        self, printer: Event, kind: str, console: Console, total: int | None = None
    ) -> None:
        if kind not in LABELS:
            raise ValueError(f"unknown progress kind {kind!r}")
        self.printer, self.kind = printer, kind
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self.task = self.progress.add_task(LABELS[kind], total=total)
        self._lock = threading.Lock()  # events come from worker threads too
        self._seen: set[str] = set()

    def __call__(self, e: dict[str, Any]) -> None:
        with self._lock:
            self._count(e)
        self.printer(e)

    def _count(self, e: dict[str, Any]) -> None:
        kind, p, t = e.get("event"), self.progress, self.task
        if self.kind == "bench":
            if kind == "problem":
                done, todo = int(e.get("done") or 0), int(e.get("todo") or 0)
                p.update(t, total=(p.tasks[0].total or 0) + done + todo, advance=done)
            elif kind == "sample":
                p.advance(t)
        elif self.kind == "bench-loop":
            if kind == "problem":
                p.update(t, total=(p.tasks[0].total or 0) + 1, advance=int(e.get("done") or 0))
            elif kind == "sample":
                name = str((e.get("record") or {}).get("problem"))
                if name not in self._seen:
                    self._seen.add(name)
                    p.advance(t)
        elif self.kind == "dataset":
            if kind == "start":
                p.update(t, total=int(e.get("todo") or 0))
            elif kind == "item":
                p.advance(t)
        elif kind == "attempt":
            source = (e.get("attempt") or {}).get("source")
            if source not in ("compiler", "given"):
                p.advance(t)


@contextlib.contextmanager
def live_progress(
    printer: Event, kind: str, *, console: Console, total: int | None = None
) -> Iterator[Event]:
    """The event callback to hand to the command: with a live bar on a terminal, else `printer`."""
    if not console.is_terminal or console.is_dumb_terminal:
        yield printer
        return
    bar = Bar(printer, kind, console, total)
    with bar.progress:
        yield bar


def drafting_what(event: dict[str, Any]) -> str:
    """What a `drafting` event drafts, in words (the CLI's and MCP's progress lines)."""
    source = event.get("source")
    if source == "compiler":
        return "compiler (torch.compile -> Triton)"
    if source == "compiler:ieee":
        return "the compiler draft again at full fp32 precision (its tf32x3 was a mismatch)"
    return f"{event.get('samples', 1)} LLM sample(s)"
