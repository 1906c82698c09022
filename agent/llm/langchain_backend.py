"""A LangChain chat model handed in by a host application (`BaseChatModel`).

The host configured the model (provider, credentials, temperature, retries); this backend only
adapts it to `generate`. `n` replies are `n` concurrent invocations (`chat_model.batch`), which
works for every provider, including those without an `n` parameter.

Sampling arguments are passed on as invocation keywords only with `pass_sampling=True`: many
providers reject unknown keywords, so by default the host's own settings stand.
"""

from __future__ import annotations

from typing import Any

from tools.core.errors import BackendError

from .base import (
    Backend,
    BackendKind,
    Prompt,
    SamplingParams,
)


class LangChainBackend(Backend):
    """Sample from a `langchain_core.language_models.BaseChatModel`."""

    def __init__(
        self,
        chat_model: Any,
        *,
        name: str | None = None,
        kind: BackendKind = "chat",
        pass_sampling: bool = False,
        max_concurrency: int | None = None,
    ) -> None:
        if not hasattr(chat_model, "batch") or not hasattr(chat_model, "invoke"):
            raise TypeError(
                f"expected a LangChain chat model (BaseChatModel), got {type(chat_model).__name__}"
            )
        self.chat_model = chat_model
        self.kind: BackendKind = kind
        self.name = name or f"langchain:{type(chat_model).__name__}"
        self.pass_sampling = pass_sampling
        self.max_concurrency = max_concurrency

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        if isinstance(prompt_or_messages, str):
            messages: list[tuple[str, str]] = [("human", prompt_or_messages)]
        else:
            roles = {"system": "system", "user": "human", "assistant": "ai"}
            messages = [(roles[m["role"]], m["content"]) for m in prompt_or_messages]
        kwargs: dict[str, Any] = (
            {
                "temperature": params.temperature,
                "top_p": params.top_p,
                "max_tokens": params.max_tokens,
            }
            if self.pass_sampling
            else {}
        )
        config = {"max_concurrency": self.max_concurrency} if self.max_concurrency else None
        try:
            results = self.chat_model.batch([messages] * params.n, config=config, **kwargs)
        except Exception as e:  # providers raise their own error types
            raise BackendError(f"{self.name} failed: {type(e).__name__}: {e}") from e
        return [_text(message) for message in results]


def _text(message: Any) -> str:
    """The text of an AIMessage whose content is a string or a list of content blocks."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)
