"""A scripted backend: replies come from a list or a JSONL file, in order.

Tests and demos queue the replies a model would have given, run the agent, and assert on what
it did and on the prompts it sent (`ReplayBackend.prompts`). A recorded run can be replayed the
same way: one JSON object `{"text": "..."}` per line of the file.
"""

from __future__ import annotations

import copy
import json
import os
from collections import deque
from pathlib import Path

from tools.core.errors import BackendError, BadInputError

from .base import (
    Backend,
    BackendKind,
    Prompt,
    SamplingParams,
)


class ReplayBackend(Backend):
    """Return scripted replies in order; record every prompt and sampling request.

    `generate(prompt, n)` takes the next `n` replies. When fewer than `n` are left it returns
    what is left; when none are left it raises `BackendError("replay backend has no replies
    left")`, so a loop that asks for more than was scripted stops loudly.
    """

    def __init__(
        self,
        replies: list[str] | str | os.PathLike[str],
        *,
        kind: BackendKind = "completion",
        name: str = "replay",
    ) -> None:
        if isinstance(replies, (str, os.PathLike)):
            self.source = str(replies)
            texts = load_replies(replies)
        else:
            self.source = "<list>"
            texts = list(replies)
            bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
            if bad:
                raise BadInputError(f"replay replies must be strings; item {bad[0]} is not")
        self._queue: deque[str] = deque(texts)
        self.kind: BackendKind = kind
        self.name = name
        self.prompts: list[Prompt] = []
        """Every prompt given to `generate`, in order (copies, safe to inspect later)."""
        self.calls: list[dict[str, float | int]] = []
        """The sampling arguments of every call, parallel to `prompts`."""

    @property
    def remaining(self) -> int:
        """Replies not yet handed out."""
        return len(self._queue)

    def skip(self, count: int) -> None:
        """Drop the next `count` replies (a resumed run has already used them)."""
        for _ in range(min(count, len(self._queue))):
            self._queue.popleft()

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        self.prompts.append(copy.deepcopy(prompt_or_messages))
        self.calls.append(params.as_kwargs())
        if not self._queue:
            raise BackendError("replay backend has no replies left")
        return [self._queue.popleft() for _ in range(min(params.n, len(self._queue)))]


def load_replies(path: str | os.PathLike[str]) -> list[str]:
    """Read a JSONL reply script: one `{"text": str}` object per non-blank line."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise BadInputError(f"cannot read replay file {file}: {e.strerror or e}") from e
    texts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadInputError(f"{file}:{number}: not valid JSON ({e.msg})") from e
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise BadInputError(f'{file}:{number}: expected an object like {{"text": "..."}}')
        texts.append(record["text"])
    return texts
