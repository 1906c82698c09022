"""Graph state: typed, JSON-friendly (it is checkpointed to SQLite after every node)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict


class Candidate(TypedDict):
    """A drafted kernel not yet evaluated."""

    source: str
    """`compiler`, `llm:<model>` or `given` (repair input)."""
    prompt: Any
    """The prompt text (or chat messages) that produced it; None for the compiler."""
    response: str
    """The raw reply (or the compiler's notes)."""
    code: str | None
    """The extracted candidate file; None when the reply held no code."""
    index: NotRequired[int]
    """Its attempt number when already assigned (a candidate left over by an interrupted
    evaluation keeps the number it had)."""


class Attempt(TypedDict):
    """An evaluated candidate."""

    index: int
    round: int
    source: str
    code: str | None
    status: str
    correct: bool
    speedup: float | None
    """Over the configured baseline, where timed (GPU); None on CPU."""
    speedups: dict[str, float]
    """Over each baseline that was timed: {"eager": x, "compile": y}."""
    verdict: dict[str, Any]
    """`tools.core.results.Verdict.to_dict()`."""
    profile: dict[str, Any] | None
    feedback: str
    """The evidence as the LLM will read it."""
    summary: str
    """One line for history and progress."""


class AgentState(TypedDict, total=False):
    problem_path: str
    """The problem file (KernelBench format)."""
    problem_source: str
    """Its text, as read at the start (a resumed run keeps using this)."""
    start_code: str | None
    """For repair: the failing kernel to start from."""
    attempts: Annotated[list[Attempt], operator.add]
    """Every evaluated candidate, in order. Appended by `evaluate`."""
    pending: list[Candidate]
    """Drafted this round, waiting for `evaluate`."""
    best: Attempt | None
    """The best correct attempt so far (fastest where timed)."""
    baselines: dict[str, Any]
    """Eager and torch.compile times (GPU) or the reason they are unavailable."""
    budget_left: int
    """Candidates that may still be evaluated."""
    round: int
    """Rounds drafted so far."""
    llm_samples_used: int
    """Replies taken from the LLM so far (a resumed replay run skips these)."""
    next_prompt: Any
    """The refinement prompt for the next round, written by `feedback`."""
    tuned: bool
    """Whether the launch-parameter tuner already ran on the best kernel."""
    decision: str
    """What `decide` chose: feedback, tune or finish."""
    stop_reason: str | None
    """Why the run ended (set by `decide`/`finish`)."""
    notes: Annotated[list[str], operator.add]
    """Things the user should know (e.g. "CPU: no timing, correct ends the run")."""
