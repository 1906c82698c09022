"""Run context: the live objects nodes use (LLM backend, verifier, run directory, progress
callback). Passed to the graph as LangGraph runtime context; never checkpointed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.config import AgentConfig
from agent.rundir import RunDir
from tools.orchestrate.verify import Verifier


@dataclass(kw_only=True)
class RunContext:
    config: AgentConfig
    verifier: Verifier
    rundir: RunDir
    backend: Any = None
    """An `agent.llm.LLMBackend`, or None when drafting with the compiler only."""
    drafter: Any = None
    """An `agent.drafters.CompilerDrafter`, or None when the compiler seed is off."""
    on_event: Callable[[dict[str, Any]], None] = lambda event: None
    """Progress callback (the CLI prints these to stderr)."""
    started: float = field(default_factory=time.monotonic)
    mode: str = "optimize"
    """`optimize` or `repair`."""
    interrupted: dict[str, Any] | None = None
    """Set by a node stopped by Ctrl-C: the state update of the work it had finished (the
    runner checkpoints it, so `--resume` neither loses nor redoes a finished attempt)."""

    @property
    def device(self) -> str:
        return self.verifier.device

    def time_left(self) -> float | None:
        if self.config.time_limit_s is None:
            return None
        return self.config.time_limit_s - (time.monotonic() - self.started)

    def emit(self, kind: str, **data: Any) -> None:
        try:
            self.on_event({"event": kind, **data})
        except Exception:  # progress display must never break a run
            pass
