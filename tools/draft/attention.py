"""Attention (`F.scaled_dot_product_attention`) through the drafter as one fused kernel (issue 33).

Inductor lowers SDPA on the CPU to its math form (two bmm and a softmax: the score matrix in
memory) and on CUDA to a library call (flash / memory-efficient attention: `policy` under the
strict policy). While Inductor traces, `F.scaled_dot_product_attention` (the name in
torch.nn.functional, which `F.multi_head_attention_forward`, hence nn.MultiheadAttention and
nn.TransformerEncoderLayer with need_weights=False, calls too; and any name of the problem's
module bound to it) is replaced by a function that calls this project's custom op
`tagent::attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)`: opaque to
Inductor, which keeps it as one extern call. The host-code hook (`rewrite.attention_in_triton`)
then points that call at `triton_attention` from tools/attention_kernels.py, whose source the
candidate carries (`assemble.with_source_before_call`).

The op's fake implementation gives Inductor the output's shape (contiguous, as the launcher
allocates it) and refuses, at trace time, what the kernel does not do (`_refusal`); its real
implementation (run only where Inductor runs the graph: the CUDA draft path) is PyTorch's SDPA.
A hand-written attention (q @ k^T, masked_fill, softmax, @ v) is not matched: it stays
Inductor's kernels (docs/compiler-drafter.md, "Attention").
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from tools.draft.result import DraftUnsupportedError

OP = "triton_attention"
"""The launcher in tools/attention_kernels.py that replaces `tagent::attention`."""

_SCHEMA = (
    "(Tensor q, Tensor k, Tensor v, Tensor? attn_mask, float dropout_p, bool is_causal, "
    "float? scale, bool enable_gqa) -> Tensor"
)

_ORIGINAL: dict[str, Any] = {}
"""PyTorch's SDPA, kept while it is swapped (the op's real implementation calls it)."""


def _sdpa() -> Any:
    import torch.nn.functional as F

    return _ORIGINAL.get("sdpa", F.scaled_dot_product_attention)


def _refusal(q, k, v, attn_mask, is_causal, enable_gqa) -> str | None:
    """Why the kernel cannot compute this call (None: it can)."""
    if q.dim() not in (3, 4) or k.dim() != q.dim() or v.dim() != q.dim():
        return (
            f"attention on tensors of {q.dim()}, {k.dim()} and {v.dim()} dimensions (the "
            "attention lowering takes 3: batch, L, E; or 4: batch, heads, L, E)"
        )
    if attn_mask is not None and is_causal:
        return "attn_mask and is_causal together (PyTorch refuses them too)"
    if attn_mask is not None and attn_mask.dim() > q.dim():
        return f"an attention mask of {attn_mask.dim()} dimensions for {q.dim()}-dimensional q"
    if q.dim() == 4 and k.shape[1] != q.shape[1] and not enable_gqa:
        return f"{q.shape[1]} query heads and {k.shape[1]} key heads without enable_gqa"
    if q.shape[0] == 1 and (k.shape[0] != 1 or v.shape[0] != 1):  # 1: static under Dynamo
        return "a query batch of 1 broadcast against a larger key/value batch"
    if any(t.is_nested for t in (q, k, v)):
        return "nested tensors"
    return None


_REFUSED: list[str] = []
"""What the fake implementation refused during the current trace (`attention_as_op` raises it
as a `DraftUnsupportedError`: raised inside Dynamo, it would arrive wrapped)."""


def _fake(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    why = _refusal(q, k, v, attn_mask, is_causal, enable_gqa)
    if why:
        _REFUSED.append(why)
        raise DraftUnsupportedError(why)
    return q.new_empty((*q.shape[:-1], v.shape[-1]))


def _real(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    return _sdpa()(
        q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
        enable_gqa=enable_gqa,
    ).contiguous()  # fmt: skip


@functools.cache
def register_op() -> None:
    """Define `tagent::attention` (once a process)."""
    import torch

    op = torch.library.custom_op("tagent::attention", _real, mutates_args=(), schema=_SCHEMA)
    op.register_fake(_fake)


def _traced_sdpa(query, key, value, attn_mask=None, dropout_p=None, is_causal=False, scale=None,
                 enable_gqa=False):  # fmt: skip
    """F.scaled_dot_product_attention's signature, calling the custom op (Dynamo traces this).
    `dropout_p`'s default is None, not 0.0: Dynamo made a float default of a global function a
    symbolic graph input, and the draft's docstring then listed `zf71 == 0.0` among its sizes."""
    import torch

    return torch.ops.tagent.attention(
        query, key, value, attn_mask, 0.0 if dropout_p is None else dropout_p, is_causal, scale,
        enable_gqa,
    )  # fmt: skip


@contextlib.contextmanager
def attention_as_op(problem_module: Any) -> Iterator[None]:
    """While Inductor traces, `F.scaled_dot_product_attention` (and each global of the problem's
    module bound to it) calls `tagent::attention` instead; restored afterwards. Raises
    `DraftUnsupportedError` where the op refused a call (`_refusal`)."""
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    bound = [n for n, v in vars(problem_module).items() if v is original]
    register_op()
    _ORIGINAL["sdpa"] = original
    _REFUSED.clear()
    F.scaled_dot_product_attention = _traced_sdpa
    for name in bound:
        setattr(problem_module, name, _traced_sdpa)
    try:
        yield
    except Exception as exc:
        if _REFUSED:
            raise DraftUnsupportedError(
                f"scaled_dot_product_attention: {_REFUSED[0]} is not supported by the attention "
                "lowering (tools/attention_kernels.py)"
            ) from exc
        raise
    finally:
        F.scaled_dot_product_attention = original
        for name in bound:
            setattr(problem_module, name, original)
        _ORIGINAL.pop("sdpa", None)
