"""An in-process vLLM engine (`pip install 'triton-agent[vllm]'`, Linux + CUDA).

Faster than HTTP for batch sampling on the machine that holds the GPU, but the engine claims
most of the GPU's memory (`gpu_memory_utilization`), which then cannot time kernels. On a
single-GPU machine prefer `vllm serve` on another GPU or host plus the `openai` backend.

vllm is imported only when a `VLLMBackend` is built, so the rest of the package works without it.
"""

from __future__ import annotations

from typing import Any

from tools.core.errors import BackendError

from .base import (
    DEFAULT_MODEL,
    Backend,
    BackendKind,
    Prompt,
    SamplingParams,
    infer_kind,
)

NOT_INSTALLED = (
    "the in-process vLLM backend needs the `vllm` package, which is not installed. "
    "Install it with `pip install 'triton-agent[vllm]'` (Linux with a CUDA GPU), or run vLLM as "
    "a server (`vllm serve facebook/KernelLLM --port 8000`) and use "
    "`--backend openai --base-url http://localhost:8000/v1`."
)


class VLLMBackend(Backend):
    """Sample with `vllm.LLM`; chat messages go through the model's own chat template."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        kind: BackendKind | None = None,
        seed: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        """`engine_kwargs` go to `vllm.LLM` as they are (dtype, tensor_parallel_size,
        gpu_memory_utilization, max_model_len, ...)."""
        try:
            import vllm
        except ImportError as e:
            raise BackendError(NOT_INSTALLED) from e
        self._vllm = vllm
        self.model = model
        self.kind: BackendKind = kind or infer_kind(model)
        self.name = f"vllm:{model}"
        if seed is not None:
            engine_kwargs["seed"] = seed
        try:
            self._llm = vllm.LLM(model=model, **engine_kwargs)
        except Exception as e:  # vLLM raises many types (OSError, ValueError, RuntimeError...)
            raise BackendError(f"vLLM could not load {model!r}: {e}") from e

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        sampling = self._vllm.SamplingParams(**params.as_kwargs())
        try:
            if isinstance(prompt_or_messages, str):
                outputs = self._llm.generate([prompt_or_messages], sampling, use_tqdm=False)
            else:
                outputs = self._llm.chat([prompt_or_messages], sampling, use_tqdm=False)
        except Exception as e:
            raise BackendError(f"{self.name} failed to generate: {e}") from e
        return [completion.text for completion in outputs[0].outputs]
