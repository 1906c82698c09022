"""Attention (`F.scaled_dot_product_attention`) through the drafter as one fused kernel (issue 33).

Inductor lowers SDPA on the CPU to its math form (two bmm and a softmax: the score matrix in
memory) and on CUDA to a library call (flash / memory-efficient attention: `policy` under the
strict policy). While Inductor traces, `F.scaled_dot_product_attention` (the name in
torch.nn.functional, which `F.multi_head_attention_forward`, hence nn.MultiheadAttention and
nn.TransformerEncoderLayer with need_weights=False, calls too; and any name of the problem's
module bound to it) is replaced by a function that calls this project's custom op
`tagent::attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)`: opaque to
Inductor, which keeps it as one extern call. The host-code hook (`rewrite.attention_in_triton`)
then points that call at `triton_attention` from tools/kernels/attention_kernels.py, whose source the
candidate carries (`assemble.with_source_before_call`).

The op's fake implementation gives Inductor the output's shape (contiguous, as the launcher
allocates it) and refuses, at trace time, what the kernel does not do (`_refusal`); its real
implementation (run only where Inductor runs the graph: the CUDA draft path) is PyTorch's SDPA.
A hand-written attention (minGPT's: `q @ k.transpose(-2, -1)`, times a scale, `masked_fill(mask,
-inf)` or `+ bias`, `softmax(dim=-1)`, dropout, `@ v`) becomes the same op by a pattern match on
Dynamo's graph (`fuse_handwritten_attention`, Inductor's pre-grad custom pass); any other shape of
it stays Inductor's kernels (docs/compiler-drafter.md, "Attention").
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections.abc import Iterator
from typing import Any

from tools.draft.result import DraftUnsupportedError

OP = "triton_attention"
"""The launcher in tools/kernels/attention_kernels.py that replaces `tagent::attention`."""

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


def _is(node: Any, functions: tuple, method: str | None = None) -> bool:
    """Whether `node` (of Dynamo's graph) calls one of `functions` or the tensor method `method`."""
    if not hasattr(node, "op"):
        return False
    if node.op == "call_function":
        return node.target in functions
    return node.op == "call_method" and node.target == method


def _rank(node: Any) -> int | None:
    import torch

    value = node.meta.get("example_value") if hasattr(node, "meta") else None
    return value.dim() if isinstance(value, torch.Tensor) else None


def _batch(node: Any) -> list[str]:
    """The dims before the last two, as text: a symbolic size compared by its expression, so
    the comparison adds no guard to the draft."""
    return [str(d) for d in node.meta["example_value"].shape[:-2]]


def _is_tensor(node: Any) -> bool:
    return _rank(node) is not None


def _single_use(*nodes: Any) -> bool:
    return all(len(n.users) == 1 for n in nodes)


def _match_attention(softmax: Any) -> dict | None:
    """The hand-written attention that ends in `softmax` (matched backwards to q @ k^T and
    forwards to @ v): its parts, or None where any step has another shape or another user."""
    import torch
    import torch.nn.functional as F

    rank = _rank(softmax)
    args = list(softmax.args) + [None] * 2
    dim = softmax.kwargs.get("dim", args[1])
    if rank not in (3, 4) or dim not in (-1, rank - 1) or softmax.kwargs.get("dtype") is not None:
        return None
    if softmax.op == "call_function" and len(softmax.args) > 2:  # F.softmax's _stacklevel/dtype
        if any(a is not None for a in softmax.args[3:]):
            return None
    chain, x = [softmax], softmax.args[0]
    keep, bias = None, None
    if _is(x, (torch.masked_fill, torch.Tensor.masked_fill), "masked_fill"):
        fill = x.args[2] if len(x.args) > 2 else x.kwargs.get("value")
        if not (isinstance(fill, float) and fill == -math.inf) or not _is_tensor(x.args[1]):
            return None
        chain.append(x)
        keep, x = x.args[1], x.args[0]
    elif _is(x, (operator.add, torch.add), "add") and len(x.args) == 2 and not x.kwargs:
        if not (_is_tensor(x.args[0]) and _is_tensor(x.args[1])):
            return None
        chain.append(x)
        x, bias = x.args
    scale: Any = 1.0  # no scaling in the graph: SDPA's default (1/sqrt(E)) would be wrong
    scale_div = False
    if _is(x, (operator.mul, torch.mul), "mul") and len(x.args) == 2 and not x.kwargs:
        tensor_side = [a for a in x.args if _is_tensor(a)]
        if len(tensor_side) != 1:
            return None
        chain.append(x)
        scale = next(a for a in x.args if a is not tensor_side[0])
        x = tensor_side[0]
    elif _is(x, (operator.truediv, torch.div), "div") and len(x.args) == 2 and not x.kwargs:
        if not _is_tensor(x.args[0]) or _is_tensor(x.args[1]):
            return None
        chain.append(x)
        x, scale, scale_div = x.args[0], x.args[1], True
    if not _is(x, (operator.matmul, torch.matmul), "matmul") or len(x.args) != 2:
        return None
    chain.append(x)
    q, kt = x.args
    after = next(iter(softmax.users)) if len(softmax.users) == 1 else None
    dropout = 0.0
    if _is(after, (F.dropout,)):
        p = after.kwargs.get("p", after.args[1] if len(after.args) > 1 else 0.5)
        training = after.kwargs.get("training", after.args[2] if len(after.args) > 2 else True)
        if training is not True and training is not False:
            return None
        dropout = p if training else 0.0
        chain.insert(0, after)
        after = next(iter(after.users)) if len(after.users) == 1 else None
    if not _is(after, (operator.matmul, torch.matmul), "matmul") or after.args[0] is not chain[0]:
        return None
    v = after.args[1]
    if not _single_use(*chain) or any(_rank(t) != rank for t in (q, kt, v)):
        return None
    if _rank(after) != rank or _batch(q) != _batch(kt) or _batch(q) != _batch(v):
        return None  # matmul's broadcasting of batch dims: the op takes one batch for all three
    for mask in (keep, bias):
        if mask is not None and _rank(mask) > rank:
            return None
    return {"q": q, "kt": kt, "v": v, "keep": keep, "bias": bias, "scale": scale,
            "scale_div": scale_div, "dropout": dropout, "chain": [after, *chain]}  # fmt: skip


def fuse_handwritten_attention(graph: Any) -> int:
    """Rewrite each hand-written attention of Dynamo's graph (`_match_attention`) as one
    `tagent::attention` call; returns how many. A masked_fill's mask (True: masked out) becomes
    the op's boolean mask by `logical_not` (a pointwise kernel of Inductor's), an added bias its
    additive mask, and the scale is passed as written (1.0 where the graph has none)."""
    import torch

    fused = 0
    for softmax in list(graph.nodes):
        if softmax.op not in ("call_function", "call_method") or not _is(
            softmax, (torch.nn.functional.softmax, torch.softmax, torch.Tensor.softmax), "softmax"
        ):
            continue
        found = _match_attention(softmax)
        if found is None:
            continue
        out = found["chain"][0]
        with graph.inserting_before(out):
            kt = found["kt"]
            if _is(kt, (torch.transpose,), "transpose") and set(kt.args[1:]) in (
                {-2, -1}, {_rank(kt) - 2, _rank(kt) - 1}
            ):  # fmt: skip
                k = kt.args[0]
            else:
                k = graph.call_method("transpose", (kt, -2, -1))
            mask = found["bias"]
            if found["keep"] is not None:
                mask = graph.call_function(torch.logical_not, (found["keep"],))
            scale = found["scale"]
            if found["scale_div"]:
                scale = (
                    1.0 / scale
                    if isinstance(scale, (int, float))
                    else graph.call_function(operator.truediv, (1.0, scale))
                )
            fused_node = graph.call_function(
                torch.ops.tagent.attention.default,
                (found["q"], k, found["v"], mask, found["dropout"], False, scale, False),
            )
            fused_node.meta.update(out.meta)
        out.replace_all_uses_with(fused_node)
        for node in found["chain"]:
            if not node.users:
                graph.erase_node(node)
        if kt is not k and not kt.users:
            graph.erase_node(kt)
        fused += 1
    if fused:
        graph.lint()
        graph.owning_module.recompile()
    return fused


def weights_not_needed(graph: Any) -> int:
    """`F.multi_head_attention_forward(..., need_weights=True)` (nn.MultiheadAttention's default)
    whose weights (output 1) nothing reads gets `need_weights=False`: the same attention output,
    computed through SDPA (hence `tagent::attention`) instead of bmm, softmax, bmm and the
    weights' average. Dynamo keeps the call as one node of its graph. Returns how many."""
    import torch.nn.functional as F

    changed = 0
    for node in graph.nodes:
        if node.op != "call_function" or node.target is not F.multi_head_attention_forward:
            continue
        if node.kwargs.get("need_weights", True) is not True or len(node.args) > 13:
            continue  # positional need_weights (args past out_proj_bias): left alone
        if all(u.target is operator.getitem and u.args[1] == 0 for u in node.users):
            node.kwargs = {**node.kwargs, "need_weights": False}
            changed += 1
    return changed


def _handwritten_pass() -> Any:
    """`fuse_handwritten_attention` as Inductor's `pre_grad_custom_pass` (a `CustomGraphPass`,
    with the uuid Inductor's graph cache asks for; the drafter turns that cache off anyway)."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class FuseHandwrittenAttention(CustomGraphPass):
        fused = 0

        def __call__(self, graph: Any) -> None:
            self.fused = weights_not_needed(graph)
            if self.fused:
                graph.owning_module.recompile()
            self.fused += fuse_handwritten_attention(graph)

        def uuid(self) -> Any:
            return "tools.draft.attention.fuse_handwritten_attention/1"

    return FuseHandwrittenAttention()


@contextlib.contextmanager
def attention_as_op(problem_module: Any) -> Iterator[None]:
    """While Inductor traces, `F.scaled_dot_product_attention` (and each global of the problem's
    module bound to it) calls `tagent::attention` instead, and a hand-written attention becomes
    the same op (`fuse_handwritten_attention`); restored afterwards. Raises
    `DraftUnsupportedError` where the op refused a call (`_refusal`)."""
    import torch.nn.functional as F
    from torch._inductor import config as inductor_config

    original = F.scaled_dot_product_attention
    bound = [n for n, v in vars(problem_module).items() if v is original]
    register_op()
    _ORIGINAL["sdpa"] = original
    _REFUSED.clear()
    F.scaled_dot_product_attention = _traced_sdpa
    for name in bound:
        setattr(problem_module, name, _traced_sdpa)
    try:
        with inductor_config.patch(pre_grad_custom_pass=_handwritten_pass()):
            yield
    except Exception as exc:
        if _REFUSED:
            raise DraftUnsupportedError(
                f"scaled_dot_product_attention: {_REFUSED[0]} is not supported by the attention "
                "lowering (tools/kernels/attention_kernels.py)"
            ) from exc
        raise
    finally:
        F.scaled_dot_product_attention = original
        for name in bound:
            setattr(problem_module, name, original)
        _ORIGINAL.pop("sdpa", None)
