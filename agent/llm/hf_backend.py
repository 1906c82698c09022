"""In-process Hugging Face transformers: `AutoModelForCausalLM` + `AutoTokenizer`.

The simplest way to run KernelLLM on one GPU without a server (`--model /path/to/KernelLLM`),
and the backend the tests drive with a tiny random Llama. Slower than vLLM: no paged attention,
no continuous batching; `max_batch` bounds how many sequences share one `generate` call.

Replies are the generated continuation only (the prompt's tokens are cut off before decoding).
Chat messages use the tokenizer's chat template when it has one, else their contents joined.
Sampling follows KernelLLM's evaluation: nucleus sampling only (top_k disabled).
"""

from __future__ import annotations

import logging
from typing import Any

from tools.core.errors import BackendError, BadInputError

from .base import (
    DEFAULT_MODEL,
    Backend,
    BackendKind,
    Prompt,
    SamplingParams,
    infer_kind,
    messages_to_text,
)

log = logging.getLogger(__name__)

DTYPES = ("bfloat16", "float16", "float32", "float64")
"""The `--dtype` names (torch's aliases, `half` and the like, are accepted too)."""


def resolve_dtype(name: str | None, device: str) -> Any:
    """The torch dtype `name` names; None: bfloat16 on CUDA, float32 elsewhere. Used here and by
    `agent.train`."""
    import torch

    if not name:
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise BadInputError(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}")
    return dtype


class HFBackend(Backend):
    """Sample from a causal LM loaded with transformers from a local directory or hub name."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        kind: BackendKind | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_batch: int = 8,
        local_files_only: bool = False,
        trust_remote_code: bool = False,
    ) -> None:
        """`device`: default "cuda" when available, else "cpu". `dtype`: a torch dtype name;
        default bfloat16 on CUDA, float32 on the CPU. `local_files_only=True` forbids any
        download (a hub name then has to be in the local cache)."""
        try:
            import torch
            import transformers
        except ImportError as e:
            raise BackendError(
                "the transformers backend needs `transformers`: pip install 'triton-agent[hf]'"
            ) from e
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._torch = torch
        self.model_name = model
        self.name = f"hf:{model}"
        self.max_batch = max_batch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = resolve_dtype(dtype, self.device)
        load: dict[str, Any] = {
            "local_files_only": local_files_only,
            "trust_remote_code": trust_remote_code,
        }
        source = model
        from .gguf import is_gguf, load_args

        if is_gguf(model):  # a GGUF file (or `gguf:<package>`): transformers dequantizes it
            source, gguf = load_args(model)
            load.update(gguf)
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(source, **load)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                source, dtype=torch_dtype, **load
            )
        except (OSError, ValueError) as e:
            raise BackendError(
                f"transformers could not load {model!r}: {e}. Pass a local directory with the "
                "weights and tokenizer (`save_pretrained` layout) as --model, or serve the model "
                "with `vllm serve facebook/KernelLLM --port 8000` and use "
                "--base-url http://localhost:8000/v1."
            ) from e
        self.model.to(self.device)
        self.model.eval()
        # KernelLLM by name is a completion model; otherwise a chat template means an instruct
        # model and its absence a base (completion) model.
        if kind is None:
            has_template = bool(getattr(self.tokenizer, "chat_template", None))
            kind = infer_kind(model) if has_template else "completion"
        self.kind: BackendKind = kind

    def render(self, prompt_or_messages: Prompt) -> tuple[str, bool]:
        """The text the model sees, and whether the tokenizer must add its special tokens
        (a chat template already spells out the BOS token itself)."""
        if isinstance(prompt_or_messages, str):
            return prompt_or_messages, True
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(
                prompt_or_messages, tokenize=False, add_generation_prompt=True
            )
            return text, False
        return messages_to_text(prompt_or_messages), True

    def _sample(self, prompt_or_messages: Prompt, params: SamplingParams) -> list[str]:
        text, add_special_tokens = self.render(prompt_or_messages)
        inputs = self.tokenizer(
            text, return_tensors="pt", add_special_tokens=add_special_tokens
        ).to(self.device)
        prompt_len = inputs["input_ids"].shape[1]
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id
        n, greedy = params.n, params.temperature == 0
        replies: list[str] = []
        while len(replies) < n:
            count = 1 if greedy else min(self.max_batch, n - len(replies))
            sampling: dict[str, Any] = (
                {"do_sample": False}
                if greedy
                else {
                    "do_sample": True,
                    "temperature": params.temperature,
                    "top_p": params.top_p,
                    "top_k": 0,
                }
            )
            try:
                with self._torch.inference_mode():
                    output = self.model.generate(
                        **inputs,
                        max_new_tokens=params.max_tokens,
                        num_return_sequences=count,
                        pad_token_id=pad_id,
                        **sampling,
                    )
            except (RuntimeError, ValueError) as e:  # CUDA OOM is a RuntimeError subclass
                raise BackendError(f"{self.name} failed to generate: {e}") from e
            new_tokens = output[:, prompt_len:]
            replies += self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            if greedy:  # every greedy sample is the same text; do not recompute it
                replies = replies * n
        return replies[:n]
