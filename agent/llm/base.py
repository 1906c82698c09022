"""The one protocol every LLM backend implements, and the small helpers they share.

A backend turns a prompt into `n` sampled replies. Two prompt shapes exist:

- a plain string, for *completion* models such as KernelLLM, which were trained on a raw prompt
  and continue it (`prompts.render_kernelllm`);
- a list of chat messages (`{"role": "system" | "user" | "assistant", "content": str}`), for
  instruct models (`prompts.render_chat`).

`LLMBackend.kind` says which shape the model behind a backend expects, so the caller can render
the matching prompt. Backends accept both shapes where the transport allows it.

Sampling defaults (temperature 1.0, top_p 0.97) are the settings KernelLLM's published
KernelBench-Triton pass@k numbers were measured with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from tools.core.errors import BadInputError
from tools.orchestrate.option_spec import Option

Message = dict[str, str]
Prompt = str | list[Message]
BackendKind = Literal["completion", "chat"]

DEFAULT_MODEL = "facebook/KernelLLM"
"""What `--model` means when nobody says otherwise."""

_ROLES = ("system", "user", "assistant")


DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 0.97
DEFAULT_MAX_TOKENS = 4096
"""KernelLLM's published sampling settings (temperature 1.0, top_p 0.97): every backend's and
the option table's defaults."""

SAMPLING_OPTIONS = (
    Option(name="temperature", group="backend", type=float, default=DEFAULT_TEMPERATURE,
           low=0, high=10, help="sampling temperature"),
    Option(name="top_p", group="backend", type=float, default=DEFAULT_TOP_P, low=0,
           low_open=True, high=1, help="nucleus sampling mass"),
    Option(name="max_tokens", group="backend", type=int, default=DEFAULT_MAX_TOKENS, low=1,
           help="most tokens of one reply"),
)  # fmt: skip
"""The sampling rows of the option table (`agent.options.OPTIONS` includes them): declared
here, beside the backends that check them, so `check_sampling` and the table are one check."""


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """How to sample: the keyword arguments of `LLMBackend.generate`, bundled for configs."""

    n: int = 1
    """Replies wanted for one prompt."""
    temperature: float = DEFAULT_TEMPERATURE
    """Softmax temperature; 0 means greedy where the backend supports it."""
    top_p: float = DEFAULT_TOP_P
    """Nucleus sampling mass."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """Upper bound on the tokens of one reply (not counting the prompt)."""

    def __post_init__(self) -> None:
        check_sampling(self.n, self.temperature, self.top_p, self.max_tokens)

    def as_kwargs(self) -> dict[str, float | int]:
        """`backend.generate(prompt, **params.as_kwargs())`."""
        return {
            "n": self.n,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }


@runtime_checkable
class LLMBackend(Protocol):
    """Anything that samples replies from a language model.

    `generate` returns exactly `n` strings (the scripted `ReplayBackend` may return fewer when
    its script runs short). A reply is the model's text only, never the prompt echoed back.
    Infrastructure failures (server unreachable, model missing, retries exhausted) raise
    `tools.core.errors.BackendError`; a reply that contains no usable code is *not* an error.
    """

    name: str
    """Human-readable identity for logs and reports, e.g. "openai:facebook/KernelLLM"."""
    kind: BackendKind
    """"completion" for raw-prompt models (KernelLLM), "chat" for instruct models."""

    def generate(
        self,
        prompt_or_messages: Prompt,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> list[str]: ...


class Backend:
    """The base class of this package's backends: `generate` checks the prompt and the
    sampling arguments (the option table's ranges) once, then hands them to `_sample`, which
    each backend writes. A host's own backend needs only the `LLMBackend` protocol."""

    name: str
    kind: BackendKind

    def generate(
        self,
        prompt_or_messages: Prompt,
        n: int = 1,
        temperature: float = DEFAULT_TEMPERATURE,
        top_p: float = DEFAULT_TOP_P,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> list[str]:
        check_prompt(prompt_or_messages)
        params = SamplingParams(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens)
        return self._sample(prompt_or_messages, params)

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        """`params.n` replies to a checked prompt."""
        raise NotImplementedError


def check_sampling(n: int, temperature: float, top_p: float, max_tokens: int) -> None:
    """Reject nonsensical sampling arguments before they reach a server or a GPU: the option
    table's check of each (`SAMPLING_OPTIONS`), and `n`, which is not an option."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BadInputError(f"n must be a positive integer, got {n!r}")
    values = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
    for option in SAMPLING_OPTIONS:
        option.check(values[option.name], label=option.name)


def check_prompt(prompt_or_messages: Prompt) -> None:
    """A prompt is a non-empty string or a non-empty list of well-formed chat messages."""
    if isinstance(prompt_or_messages, str):
        if not prompt_or_messages:
            raise BadInputError("the prompt is empty")
        return
    if not isinstance(prompt_or_messages, list) or not prompt_or_messages:
        raise BadInputError(
            "a prompt must be a string or a non-empty list of {'role', 'content'} messages, "
            f"got {type(prompt_or_messages).__name__}"
        )
    for i, message in enumerate(prompt_or_messages):
        if (
            not isinstance(message, dict)
            or message.get("role") not in _ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise BadInputError(
                f"chat message {i} must be {{'role': one of {_ROLES}, 'content': str}}, "
                f"got {message!r:.200}"
            )


def messages_to_text(messages: list[Message]) -> str:
    """Render chat messages for a model without a chat template: the contents, blank-line joined.

    Roles are deliberately not spelled out: a completion model never saw "User:" markers in
    training, and the contents (instructions, then the problem) read as one prompt.
    """
    return "\n\n".join(m["content"].strip() for m in messages if m["content"].strip()) + "\n"


def infer_kind(model: str) -> BackendKind:
    """Guess the prompt shape from a model name: KernelLLM is a completion model, others chat."""
    return "completion" if "kernelllm" in model.lower() else "chat"
