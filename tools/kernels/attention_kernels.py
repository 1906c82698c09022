"""This project's attention in Triton: `F.scaled_dot_product_attention` as ONE fused kernel, for
candidates that must not call a library attention (issue 33).

`triton_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)` takes the
arguments of the drafter's custom op `tagent::attention` (tools/draft/attention.py), which are
SDPA's: q (..., L, E), k (..., S, E), v (..., S, Ev) with one or two leading dimensions (batch,
heads); `attn_mask` None, boolean (True: takes part) or additive, broadcastable to
(batch, heads, L, S); `is_causal` the top-left causal mask (query i sees keys j <= i); `scale`
None for 1/sqrt(E); `enable_gqa` k and v with fewer heads than q (a group of query heads
shares one). Returns (..., L, Ev), contiguous, q's dtype.

`_attention_kernel`: one program per (BLOCK_M query rows, batch x head). It keeps its Q tile,
the running row maximum m, the running sum l and the output accumulator on chip and loops over
the keys BLOCK_N at a time (flash attention's online softmax): s = q k^T * scale (+ mask),
m' = max(m, rowmax s), p = exp(s - m'), l = l * exp(m - m') + rowsum p,
acc = acc * exp(m - m') + p v; the output is acc / l. The (L, S) score matrix is never written:
memory traffic is Q, K, V, the mask if any, and the output. Causal: key blocks past the
diagonal are skipped, not only masked. A row with no key left (a boolean mask all False) is 0,
as PyTorch's `_safe_softmax` (the math path's) gives, not NaN.

Dropout (p > 0: the reference's SDPA call in training mode): after the softmax, each weight is
kept with probability 1 - p and scaled by 1 / (1 - p), the mask drawn in the kernel
(`tl.rand`: Philox, keyed by a seed the launcher draws with `torch.randint` plus the
batch-head index, counter the (row, key) position), so no (L, S) mask is materialised. The sum l
is of the weights before dropout, as in PyTorch (dropout after softmax). It cannot match
PyTorch's random stream: such a problem is judged statistically (tools/checks/stochastic.py).

Precision: fp32 products with `tl.dot(..., input_precision="tf32x3")` (three TF32 products, about
fp32 accuracy; the GEMM template's choice, see its PRECISION_NOTE; plain TF32 is ~1e-3 relative
and fails fp32's 1e-4), fp32 softmax statistics and accumulator; fp16/bf16 inputs are widened to
fp32 in the kernel and the output rounded once. `exp` is `tl.exp` (no libdevice, so it runs
under the interpreter). `ATTENTION_CONFIG` (head dims up to 64) and `ATTENTION_CONFIG_WIDE`
(above) have the launch parameters (keywords of the launcher).

The code between the `candidate source` markers is self-contained (torch, triton, tl): the
compiler drafter copies it into a candidate file with `candidate_source()`, so a candidate
never imports `tools/`.
"""

from __future__ import annotations

# --- candidate source begin (copied verbatim into compiler drafts) ---
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attention_kernel(
    q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, seed_ptr,
    L, S, E, EV, HEADS, GROUP, scale, dropout_p, dropout_scale,
    sqb, sqh, sqm, sqe, skb, skh, skn, ske, svb, svh, svn, sve,
    smb, smh, smm, smn, sob, soh, som, soe,
    MASK: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr,
):  # fmt: skip
    # MASK: 0 none, 1 boolean (True takes part), 2 additive.
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // HEADS
    h = bh % HEADS
    hk = h // GROUP  # k/v head (GROUP query heads share one under GQA; GROUP 1 otherwise)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    re = tl.arange(0, BLOCK_E)
    rev = tl.arange(0, BLOCK_EV)
    mask_m = rm < L
    q = tl.load(
        q_ptr + b * sqb + h * sqh + rm[:, None] * sqm + re[None, :] * sqe,
        mask=mask_m[:, None] & (re[None, :] < E),
        other=0.0,
    ).to(tl.float32)
    k_base = k_ptr + b * skb + hk * skh
    v_base = v_ptr + b * svb + hk * svh
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_EV), dtype=tl.float32)
    if DROPOUT:
        seed = tl.load(seed_ptr) + bh  # one Philox key a (batch, head): independent streams
    end = S
    if CAUSAL:  # keys past the last row of this block are masked for every row: not visited
        end = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    for n0 in range(0, end, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        mask_n = rn < S
        kt = tl.load(
            k_base + rn[None, :] * skn + re[:, None] * ske,
            mask=mask_n[None, :] & (re[:, None] < E),
            other=0.0,
        ).to(tl.float32)
        s = tl.dot(q, kt, input_precision=PRECISION) * scale
        valid = mask_m[:, None] & mask_n[None, :]
        if MASK != 0:
            mv = tl.load(
                mask_ptr + b * smb + h * smh + rm[:, None] * smm + rn[None, :] * smn,
                mask=valid,
                other=0,
            )
            if MASK == 1:
                valid = valid & (mv != 0)
            else:
                s = s + mv.to(tl.float32)
        if CAUSAL:
            valid = valid & (rn[None, :] <= rm[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # -inf where no key of this row was valid yet: subtract 0 instead (exp(-inf) = 0, no NaN)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if DROPOUT:
            offsets = rm[:, None] * S + rn[None, :]
            keep = tl.rand(seed, offsets) >= dropout_p
            p = tl.where(keep, p * dropout_scale, 0.0)
        v = tl.load(
            v_base + rn[:, None] * svn + rev[None, :] * sve,
            mask=mask_n[:, None] & (rev[None, :] < EV),
            other=0.0,
        ).to(tl.float32)
        acc = acc * alpha[:, None]
        acc = tl.dot(p, v, acc, input_precision=PRECISION)
        m_i = m_new
    out = acc / tl.where(l_i > 0.0, l_i, 1.0)[:, None]  # no key at all: 0 (acc is 0 there)
    tl.store(
        o_ptr + b * sob + h * soh + rm[:, None] * som + rev[None, :] * soe,
        out.to(o_ptr.dtype.element_ty),
        mask=mask_m[:, None] & (rev[None, :] < EV),
    )


ATTENTION_CONFIG = {
    "BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "num_stages": 2, "precision": "tf32x3",
}  # fmt: skip
"""The kernel's launch parameters for head dims up to 64 (the launcher takes them as keywords,
for the tuner). tl.dot needs tiles of at least 16 on a GPU. Chosen by the register count for
sm_90 (ptxas, tests/test_attention.py), not yet by time: tf32x3 keeps each operand as two TF32
halves, and at head dim 64 64x32 tiles at 4 warps spilled 96 bytes with a boolean mask (255
registers), 64x16 at 4 warps spills nothing in any variant (163-242 registers: causal, boolean
mask, additive mask with dropout). benchmarks/gpu_attention.py times the alternatives."""

ATTENTION_CONFIG_WIDE = {**ATTENTION_CONFIG, "BLOCK_M": 32, "num_stages": 1}
"""For head dims above 64 (up to 128): at 128, 64x16 tiles spilled 64-188 bytes; 32x16 at
4 warps and 1 stage spills nothing (250-255 registers)."""


def attention_config(head_dim: int) -> dict:
    """The default launch parameters for a head dim (the larger of q's and v's)."""
    return dict(ATTENTION_CONFIG if head_dim <= 64 else ATTENTION_CONFIG_WIDE)


def triton_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                     enable_gqa=False, **config):  # fmt: skip
    """F.scaled_dot_product_attention's forward in one Triton kernel (`config`: ATTENTION_CONFIG)."""
    unknown = set(config) - set(ATTENTION_CONFIG)
    if unknown:
        raise TypeError(
            f"unknown launch parameters {sorted(unknown)}; known: {sorted(ATTENTION_CONFIG)}"
        )
    if q.dim() not in (3, 4) or k.dim() != q.dim() or v.dim() != q.dim():
        raise ValueError(
            f"attention on tensors of {q.dim()}, {k.dim()}, {v.dim()} dimensions: "
            "3 (batch, L, E) or 4 (batch, heads, L, E) supported"
        )
    if attn_mask is not None and is_causal:
        raise ValueError("attn_mask and is_causal together (PyTorch refuses them too)")
    squeeze = q.dim() == 3
    if squeeze:  # (batch, L, E): one head (views, no copy)
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)
        if attn_mask is not None and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(1)
    batch = max(q.shape[0], k.shape[0], v.shape[0])
    heads, L, E = q.shape[1], q.shape[2], q.shape[3]
    S, EV = k.shape[2], v.shape[3]
    kv_heads = k.shape[1]
    cfg = {**attention_config(max(E, EV)), **config}
    if enable_gqa and kv_heads != heads:
        if heads % kv_heads:
            raise ValueError(f"{heads} query heads are not a multiple of {kv_heads} key heads")
        group = heads // kv_heads
    else:
        group = 1
        kv_heads = heads
    # Broadcast batch (and heads) as PyTorch does: strides of 0, views only.
    q = q.expand(batch, heads, L, E)
    k = k.expand(batch, kv_heads, S, E)
    v = v.expand(batch, kv_heads, S, EV)
    out = torch.empty((batch, heads, L, EV), dtype=q.dtype, device=q.device)
    if scale is None:
        scale = 1.0 / math.sqrt(E)
    mask_kind = 0
    mask = out  # a placeholder pointer where there is no mask (never read)
    sm = (0, 0, 0, 0)
    if attn_mask is not None:
        mask_kind = 1 if attn_mask.dtype == torch.bool else 2
        mask = attn_mask.expand(batch, heads, L, S)
        sm = mask.stride()
    dropout = dropout_p > 0.0
    seed = torch.randint(0, 2**31 - 1 - batch * heads, (1,), device=q.device) if dropout else out
    grid = (triton.cdiv(L, cfg["BLOCK_M"]), batch * heads)
    _attention_kernel[grid](
        q, k, v, mask, out, seed,
        L, S, E, EV, heads, group, float(scale), float(dropout_p),
        1.0 / (1.0 - dropout_p) if dropout_p < 1.0 else 0.0,
        *q.stride(), *k.stride(), *v.stride(), *sm, *out.stride(),
        MASK=mask_kind, CAUSAL=bool(is_causal), DROPOUT=dropout, PRECISION=cfg["precision"],
        BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
        BLOCK_E=max(16, triton.next_power_of_2(E)), BLOCK_EV=max(16, triton.next_power_of_2(EV)),
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )  # fmt: skip
    return out.squeeze(1) if squeeze else out


# --- candidate source end ---

ATTENTION_KERNELS = ("_attention_kernel",)
"""The `@triton.jit` kernels `triton_attention` runs (`DraftResult.kernels`)."""

PRECISION_NOTE = (
    "attention in Triton (tools.kernels.attention_kernels: one fused kernel, online softmax over key "
    "blocks, no score matrix in memory); fp32 products with tl.dot input_precision='tf32x3' "
    "(not plain TF32), fp32 softmax statistics and accumulator"
)


def candidate_source() -> str:
    """The self-contained source of the kernel and its launcher, for a candidate file."""
    with open(__file__) as f:
        text = f.read()
    begin = text.index("# --- candidate source begin")
    begin = text.index("\n", begin) + 1
    end = text.index("# --- candidate source end ---")
    header = "# Attention in Triton (copied from triton-agent's tools/kernels/attention_kernels.py).\n"
    return header + text[begin:end].strip() + "\n"
