"""LLM backends: one protocol (`LLMBackend.generate`), several ways to reach a model.

| kind        | class              | reaches                                                  |
|-------------|--------------------|----------------------------------------------------------|
| `openai`    | `OpenAIBackend`    | any OpenAI-compatible server (vLLM, SGLang, TGI, Ollama) |
| `vllm`      | `VLLMBackend`      | an in-process vLLM engine (optional extra)               |
| `hf`        | `HFBackend`        | in-process transformers, local weights                   |
| `langchain` | `LangChainBackend` | a LangChain chat model from a host application           |
| `replay`    | `ReplayBackend`    | scripted replies (tests, demos, recorded runs)           |

`REGISTRY` maps each kind to its factory (the one list of kinds: `KINDS` and the option table's
`BACKENDS` come from it); `make_backend` picks one from CLI-style options. Heavy dependencies (transformers, vllm) are
imported only when their backend is built.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.core.errors import BackendConfigError, BackendError

from .base import DEFAULT_MODEL, BackendKind, LLMBackend, SamplingParams, messages_to_text
from .replay import ReplayBackend

__all__ = [
    "BASE_URL_ENV_VARS",
    "DEFAULT_MODEL",
    "KINDS",
    "BackendKind",
    "LLMBackend",
    "OpenAIBackend",
    "REGISTRY",
    "ReplayBackend",
    "SamplingParams",
    "backend_for",
    "env_base_url",
    "make_backend",
    "messages_to_text",
    "resolve_kind",
]

BASE_URL_ENV_VARS = ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL")
"""Where `make_backend` looks for a server address when none is passed, in this order."""

NO_BACKEND_HELP = (
    "no LLM backend configured. Choose one:\n"
    "  --base-url URL    an OpenAI-compatible server, e.g. start "
    "`vllm serve facebook/KernelLLM --port 8000` and pass --base-url http://localhost:8000/v1 "
    "(or set TRITON_AGENT_BASE_URL);\n"
    "  --model DIR       a local directory with weights, run in-process with transformers;\n"
    "  --backend vllm    an in-process vLLM engine (pip install 'triton-agent[vllm]');\n"
    '  --replies FILE    replay scripted replies from a JSONL file of {"text": ...} lines.'
)


def __getattr__(name: str) -> Any:
    # The OpenAI client (and its HTTP stack) is imported only when used: a broken or missing
    # install of it must not stop the replay, compiler or in-process backends.
    if name == "OpenAIBackend":
        return _openai_backend_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _openai_backend_class() -> type:
    try:
        from .openai_backend import OpenAIBackend
    except ImportError as exc:
        raise BackendError(
            f"the OpenAI-compatible backend cannot be loaded: {exc}. Repair the install "
            "(`pip install --upgrade openai`) or choose another backend"
        ) from exc
    return OpenAIBackend


def _replay(*, replies: Any = None, **kw: Any) -> LLMBackend:
    if replies is None:
        raise BackendConfigError("the replay backend needs replies (--replies FILE.jsonl)")
    return ReplayBackend(replies, **kw)


def _openai(
    *, model: str | None, base_url: str | None, api_key: str | None, **kw: Any
) -> LLMBackend:
    return _openai_backend_class()(
        model=model or DEFAULT_MODEL, base_url=base_url, api_key=api_key, **kw
    )


def _vllm(*, model: str | None, **kw: Any) -> LLMBackend:
    from .vllm_backend import VLLMBackend

    return VLLMBackend(model=model or DEFAULT_MODEL, **kw)


def _hf(*, model: str | None, **kw: Any) -> LLMBackend:
    from .hf_backend import HFBackend

    return HFBackend(model=model or DEFAULT_MODEL, **kw)


def _langchain(*, chat_model: Any = None, **kw: Any) -> LLMBackend:
    from .langchain_backend import LangChainBackend

    if chat_model is None:
        raise BackendConfigError("the langchain backend needs a chat model (chat_model=...)")
    return LangChainBackend(chat_model, **kw)


REGISTRY: dict[str, Callable[..., LLMBackend]] = {
    "openai": _openai,
    "vllm": _vllm,
    "hf": _hf,
    "replay": _replay,
    "langchain": _langchain,
}
"""Every backend kind and its factory, which takes `make_backend`'s keywords and uses those it
needs (`model`, `base_url`, `api_key`, `replies`, `chat_model`, the backend's own). The one
list of kinds: `KINDS` and the option table's `BACKENDS` are derived from it."""

KINDS = ("auto", *REGISTRY)
"""What `make_backend` accepts: a registered kind, or `auto`."""


def make_backend(
    kind: str = "auto",
    *,
    model: str | None = None,
    base_url: str | None = None,
    replies: str | os.PathLike[str] | list[str] | None = None,
    api_key: str | None = None,
    **kw: Any,
) -> LLMBackend:
    """Build the backend that `kind` names, or for "auto" the one the options point at.

    "auto" picks, in order: `replay` when `replies` is given; `openai` when a base URL is given
    or set in TRITON_AGENT_BASE_URL / OPENAI_BASE_URL; `hf` when `model` is a local directory.
    Anything else raises `BackendError` listing the options (nothing is downloaded implicitly).
    Extra keywords go to the backend's constructor (e.g. `max_attempts`, `timeout_s`, `kind`
    "completion"/"chat" via `prompt_kind`, `chat_model` for langchain).
    """
    if "prompt_kind" in kw:  # `kind` is taken by the backend's name here
        kw["kind"] = kw.pop("prompt_kind")
    base_url = base_url or env_base_url()
    kind = resolve_kind(kind, model=model, base_url=base_url, replies=replies)
    if kind == "compiler":
        raise BackendConfigError(NO_BACKEND_HELP)
    factory = REGISTRY[kind]  # it receives those of the connection keywords it names
    given = {"model": model, "base_url": base_url, "api_key": api_key, "replies": replies}
    wanted = inspect.signature(factory).parameters
    return factory(**{k: v for k, v in given.items() if k in wanted}, **kw)


def resolve_kind(
    kind: str = "auto",
    *,
    model: str | None = None,
    base_url: str | None = None,
    replies: Any = None,
    compiler: bool = False,
) -> str:
    """The one place "auto" becomes a backend: `replay` when replies are given, `openai` when a
    base URL is (or is set in BASE_URL_ENV_VARS), `hf` when `model` is a local directory,
    `compiler` (no model: the compiler drafter alone) when nothing is configured. A model name
    that is not a directory, with no server, is refused (nothing is downloaded implicitly).
    `compiler=True` allows the name `compiler` itself (the commands' choice, not the API's)."""
    known = KINDS + (("compiler",) if compiler else ())
    if kind not in known:
        raise BackendConfigError(f"unknown backend {kind!r}; choose one of {', '.join(known)}")
    if kind != "auto":
        return kind
    base_url = base_url or env_base_url()
    if replies is not None:
        return "replay"
    if base_url:
        return "openai"
    if model and (Path(model).is_dir() or model.startswith("gguf:") or model.endswith(".gguf")):
        return "hf"
    if model:
        raise BackendConfigError(NO_BACKEND_HELP)
    return "compiler"


def backend_for(config: Any) -> LLMBackend | None:
    """The backend a run configuration (`AgentConfig`) names; None for the compiler drafter
    alone. optimize, repair, the REPL and bench all build their backend here."""
    kind = resolve_kind(
        config.backend,
        model=config.model,
        base_url=config.base_url,
        replies=config.replies,
        compiler=True,
    )
    if kind == "compiler":
        return None
    kw: dict[str, Any] = {}
    if config.prompt_format != "auto":
        kw["prompt_kind"] = config.prompt_format
    return make_backend(
        kind,
        model=config.model,
        base_url=config.base_url,
        replies=config.replies,
        api_key=config.api_key,
        **kw,
    )


def env_base_url() -> str | None:
    for var in BASE_URL_ENV_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return None
