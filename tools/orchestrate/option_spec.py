"""One option of the table (`agent.options`): its declaration and the one check of its value.

In tools/, which never imports `agent/`, so the modules that own an option's default and range
declare it here and check their values with it, without importing the table, which imports
them: `tools.orchestrate.verify_options` the verification rows (`VerifyOptions` checks itself
with them), `agent.llm.base` the sampling rows its backends check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tools.core.errors import BadInputError


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option. `name` is the `AgentConfig` field; `flag` the command-line spelling."""

    name: str
    group: str
    """`loop` (optimize, repair, REPL), `backend` (and bench), `verify` (every command that
    verifies)."""
    type: type
    default: Any
    help: str
    flag: str = ""
    """Default: `--` + the name with dashes."""
    choices: tuple[str, ...] | None = None
    low: float | None = None
    """Smallest value allowed (inclusive unless `low_open`)."""
    low_open: bool = False
    high: float | None = None
    nullable: bool = False
    """None is a value (the default is derived elsewhere)."""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def check(self, value: Any, label: str | None = None) -> None:
        """Raise BadInputError when `value` is not allowed, naming `label` (default: the flag;
        a backend's `generate` names its keyword)."""
        label = label or self.cli_flag
        if value is None:
            if self.nullable:
                return
            raise BadInputError(f"{label} needs a value")
        if self.choices is not None:
            if value not in self.choices:
                raise BadInputError(
                    f"{label} must be one of {', '.join(self.choices)}, got {value!r}"
                )
            return
        if self.type in (int, float):
            kind = "a whole number" if self.type is int else "a finite number"
            wanted = f"{label} must be {kind} {self.range_text()}"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise BadInputError(f"{wanted}, got {value!r}")
            low_bad = self.low is not None and (
                value <= self.low if self.low_open else value < self.low
            )
            high_bad = self.high is not None and value > self.high
            whole = self.type is not int or value == int(value)
            if not math.isfinite(value) or low_bad or high_bad or not whole:
                raise BadInputError(f"{wanted}, got {value}")

    def range_text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return " and ".join(parts) or "any number"
