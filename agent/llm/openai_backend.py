"""Any OpenAI-compatible HTTP server: `vllm serve`, SGLang, TGI, Ollama, hosted APIs.

A string prompt goes to `/v1/completions` (what KernelLLM needs: its prompt is raw text, no chat
template); a message list goes to `/v1/chat/completions`.

Sampling `n` replies: one request asks for `n` choices. Servers that ignore `n` (or cap it)
return fewer; the backend then asks again for the rest. Servers that reject `n` outright (HTTP
400 with n > 1) are asked one reply per request from then on.

Failures: connection errors, timeouts, HTTP 429 and 5xx, and replies that are empty or only
whitespace are retried with exponential backoff (`max_attempts` tries in a row, default 3).
After that, or at once for errors a retry cannot fix (401, 404, other 4xx), `BackendError` says
what happened and how to start a server.
"""

from __future__ import annotations

import logging
import os
import random
import time

import openai

from tools.core.errors import BackendError

from .base import (
    DEFAULT_MODEL,
    Backend,
    BackendKind,
    Prompt,
    SamplingParams,
    infer_kind,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "http://localhost:8000/v1"
"""`vllm serve`'s default address."""

START_SERVER_HINT = (
    "Start an OpenAI-compatible server, e.g. `vllm serve facebook/KernelLLM --port 8000`, "
    "then pass `--base-url http://localhost:8000/v1` (or set TRITON_AGENT_BASE_URL)."
)

_RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)
"""APIConnectionError covers APITimeoutError; InternalServerError is any HTTP 5xx."""


class OpenAIBackend(Backend):
    """Sample from a model behind an OpenAI-compatible endpoint.

    `kind` defaults to "completion" for KernelLLM-named models and "chat" otherwise; it only
    tells callers which prompt to render, both endpoints work whatever it says.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        kind: BackendKind | None = None,
        timeout_s: float = 600.0,
        max_attempts: int = 3,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        extra_body: dict | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.kind: BackendKind = kind or infer_kind(model)
        self.name = f"openai:{model}@{self.base_url}"
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.extra_body = dict(extra_body or {})
        self._n_supported = True
        # The client's own retries are off: ours below decide, and count empty replies too.
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout_s,
            max_retries=0,
        )

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        n = params.n
        replies: list[str] = []
        failures = 0  # consecutive attempts that produced nothing usable
        last_problem = ""
        while len(replies) < n:
            want = n - len(replies) if self._n_supported else 1
            try:
                texts = self._request(prompt_or_messages, want, params)
            except openai.BadRequestError as e:
                if want > 1 and self._n_supported:
                    # Some servers reject n > 1 outright; sample one per request from now on.
                    log.info("server rejected n=%d (%s); asking one reply per request", want, e)
                    self._n_supported = False
                    continue
                raise BackendError(f"{self.name} rejected the request: {_detail(e)}") from e
            except _RETRYABLE as e:
                texts, last_problem = [], f"{type(e).__name__}: {_detail(e)}"
            except openai.APIStatusError as e:
                raise BackendError(self._status_message(e)) from e

            usable = [t for t in texts if t.strip()]
            if texts and not usable:
                last_problem = (
                    f"{len(texts)} empty or whitespace-only repl{'y' if len(texts) == 1 else 'ies'}"
                )
            if usable:
                replies.extend(usable[: n - len(replies)])
                failures = 0
                continue
            failures += 1
            if failures >= self.max_attempts:
                raise BackendError(self._gave_up_message(failures, last_problem))
            delay = min(self.backoff_s * 2 ** (failures - 1), self.max_backoff_s)
            delay *= 1 + 0.1 * random.random()  # jitter: parallel workers do not retry in step
            log.warning(
                "%s: %s; retrying in %.2fs (attempt %d of %d)",
                self.name,
                last_problem,
                delay,
                failures + 1,
                self.max_attempts,
            )
            time.sleep(delay)
        return replies

    def _request(self, prompt: Prompt, n: int, params: SamplingParams) -> list[str]:
        """One HTTP request for `n` of the replies; the texts of its choices in index order
        (None content -> "")."""
        common = {"model": self.model, **params.as_kwargs(), "n": n}
        if self.extra_body:
            common["extra_body"] = self.extra_body
        if isinstance(prompt, str):
            response = self._client.completions.create(prompt=prompt, **common)
            choices = sorted(response.choices or [], key=lambda c: c.index)
            return [c.text or "" for c in choices]
        response = self._client.chat.completions.create(messages=prompt, **common)
        choices = sorted(response.choices or [], key=lambda c: c.index)
        return [(c.message.content if c.message else None) or "" for c in choices]

    def _gave_up_message(self, attempts: int, problem: str) -> str:
        message = f"{self.name}: no usable reply after {attempts} attempts ({problem})."
        if "Connection" in problem or "Timeout" in problem:
            message += f" Is a server listening at {self.base_url}? {START_SERVER_HINT}"
        return message

    def _status_message(self, e: openai.APIStatusError) -> str:
        message = f"{self.name}: HTTP {e.status_code}: {_detail(e)}"
        if e.status_code == 401 or e.status_code == 403:
            return message + " Check --api-key (or OPENAI_API_KEY)."
        if e.status_code == 404:
            served = self._served_models()
            if served:
                return message + f" The server serves: {', '.join(served)}; pass one as --model."
            return message + f" Is {self.base_url} the server's /v1 address? {START_SERVER_HINT}"
        return message

    def _served_models(self) -> list[str]:
        """Best effort: the model names the server lists, for a helpful 404 message."""
        try:
            return [m.id for m in self._client.models.list().data]
        except openai.OpenAIError:
            return []


def _detail(e: openai.OpenAIError) -> str:
    """The server's own error text where it sent one, else the exception's message."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:500]
    return str(e)[:500] or type(e).__name__
