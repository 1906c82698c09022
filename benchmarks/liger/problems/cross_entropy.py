"""Per-token cross-entropy (reduction "none") over a vocabulary, fp32 logits."""

import torch
import torch.nn as nn

TOKENS = 4096
VOCAB = 16384


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(logits, target, reduction="none")


def get_inputs():
    return [torch.randn(TOKENS, VOCAB), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return []
