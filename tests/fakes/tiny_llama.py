"""A tiny random Llama and a locally trained tokenizer, saved like a hub checkout.

Nothing is downloaded: the tokenizer is a byte-level BPE trained on a few strings with the
`tokenizers` library (so it can encode any prompt), the model a one-layer `LlamaForCausalLM` with
random weights. It generates garbage, quickly, which is all the HF backend's tests need.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = [
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n",
    "@triton.jit\ndef add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n",
    "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n",
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n",
    "You write custom Triton kernels to replace PyTorch operators.",
]

# A minimal chat template (Jinja, rendered by transformers) so the chat path can be tested.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tiny_llama(directory: str | Path, *, chat_template: bool = False) -> Path:
    """Write a tiny random Llama + tokenizer into `directory` (created); return its path."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    if chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=len(tokenizer),
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama checkout (no chat template), built once per test session."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_chat_llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tiny Llama with a chat template."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-chat-llama"), chat_template=True)
