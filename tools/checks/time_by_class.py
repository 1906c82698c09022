"""Where a network's time goes: each GPU kernel's time grouped by the kind of layer it computes
(convolution, GEMM, normalization, ...), the candidate's beside eager's and torch.compile's.

A whole network is hundreds of kernels, and the three runs do not launch the same ones: eager
calls cuDNN/cuBLAS and ATen's elementwise kernels, torch.compile fuses pointwise work into
Triton kernels around cuDNN/cuBLAS calls, the candidate is all Triton. Kernels are not matched
one to one; their time is summed per class of layer, so a user sees, say, that convolutions
take 2.1x eager's time while the fused pointwise work takes half, and which layer a network
below its baseline loses on.

Pure: no torch, no GPU. Rows are `tools.job.gpu_measures.breakdown`'s (name, time_us per forward);
the classes are read from kernel names (`kernel_class`), a heuristic: a name that says nothing
("other") is reported as such, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CLASSES = (
    "convolution",
    "GEMM",
    "attention",
    "recurrent",
    "normalization",
    "softmax",
    "pooling",
    "reduction",
    "pointwise",
    "copy/layout",
    "other",
)

# Library and ATen kernel names (eager; torch.compile's extern calls), checked in this order.
_LIBRARY = (
    ("attention", r"flash|fmha|attention|attn"),
    ("recurrent", r"lstm|gru|\brnn|rnn_|persist_common|LSTM|GRU"),
    ("convolution", r"conv|fprop|dgrad|wgrad|winograd|implicit_gemm_|xmma_fprop|cudnn"),
    ("GEMM", r"gemm|gemv|cutlass|cublas|matmul|sgemm|splitK|dot_kernel|nvjet"),
    ("normalization", r"batch_norm|layer_norm|group_norm|instance_norm|_norm_|rms_norm|welford"),
    ("softmax", r"softmax"),
    ("pooling", r"pool"),
    ("copy/layout", r"copy|cat_|CatArray|transpose|permute|index_|gather|scatter|memcpy|fill"),
    ("reduction", r"reduce|sum_|mean|cumsum|scan"),
    ("pointwise", r"elementwise|vectorized|unrolled|pointwise|activation|relu|gelu|sigmoid|tanh"),
)
# Op names inside a fused Triton kernel's name (Inductor: triton_{poi,red,per}_fused_<ops>_<n>)
_FUSED_REDUCTION = (
    ("normalization", r"batch_norm|layer_norm|group_norm|native_norm|var_mean|rsqrt"),
    ("softmax", r"softmax|_log_softmax|logsumexp"),
    ("pooling", r"pool"),
)
_FUSED_POINTWISE = (("pooling", r"pool"),)
_LAYOUT_ONLY = re.compile(
    r"^(?:_?(?:cat|clone|copy|permute|transpose|view|reshape|expand|"
    r"unsqueeze|squeeze|constant_pad_nd|slice|select|stack|split)_?\d*_?)+$"
)
# This project's own Triton kernels (tools/kernels/triton_conv.py, gemm_template.py, recurrent_kernels.py,
# attention_kernels.py) and kernels people name after what they do.
_OWN = (
    ("convolution", r"conv"),
    ("attention", r"attention|attn|flash"),
    ("recurrent", r"lstm|gru|rnn|recurren"),
    ("GEMM", r"gemm|matmul|mm_kernel|linear|bmm"),
    ("normalization", r"norm"),
    ("softmax", r"softmax"),
    ("pooling", r"pool"),
    ("reduction", r"reduc|sum|mean|scan|cumsum"),
)


_LIBRARY_NAME = re.compile(
    r"::|^void |[<>(]|^(?:sm\d+_|ampere_|volta_|turing_|hopper_|cutlass|nvjet|xmma|cudnn|cublas)"
)
"""A CUDA C++ kernel's name (cuDNN, cuBLAS, ATen): never one of this project's Triton kernels."""


def _first(name: str, table: tuple[tuple[str, str], ...]) -> str | None:
    for cls, pattern in table:
        if re.search(pattern, name, re.IGNORECASE):
            return cls
    return None


def kernel_class(name: str) -> str:
    """The class of layer a GPU kernel computes, read from its name (one of `CLASSES`)."""
    m = re.match(r"triton_(poi|red|per|tem)_(?:fused_)?(.*?)(?:_\d+)?(?:_sized)?$", name)
    if m:
        kind, ops = m.groups()
        if kind == "tem":  # an Inductor template: a GEMM or convolution
            return "convolution" if "conv" in ops else "GEMM"
        if kind in ("red", "per"):
            return _first(ops, _FUSED_REDUCTION) or "reduction"
        if _LAYOUT_ONLY.match(ops + "_"):
            return "copy/layout"
        return _first(ops, _FUSED_POINTWISE) or "pointwise"
    if not _LIBRARY_NAME.search(name):  # a Triton kernel (a plain Python identifier)
        own = _first(name, _OWN)
        if own:
            return own
    return _first(name, _LIBRARY) or "other"


@dataclass(kw_only=True)
class ClassTime:
    """One class of layer's device time per forward, in microseconds (None: that run was not
    profiled)."""

    layer: str
    candidate_us: float
    share: float
    """Of the candidate's kernel time."""
    eager_us: float | None = None
    compile_us: float | None = None
    kernels: int = 0
    """The candidate's distinct kernels in this class."""

    @property
    def best_us(self) -> float | None:
        known = [t for t in (self.eager_us, self.compile_us) if t is not None]
        return min(known) if known else None


def _sums(rows: list[dict[str, Any]] | None) -> dict[str, float] | None:
    if not rows:
        return None
    out: dict[str, float] = {}
    for r in rows:
        cls = kernel_class(str(r.get("name", "")))
        out[cls] = out.get(cls, 0.0) + float(r.get("time_us") or 0.0)
    return out


def time_by_class(
    candidate: list[dict[str, Any]],
    eager: list[dict[str, Any]] | None = None,
    compiled: list[dict[str, Any]] | None = None,
) -> list[ClassTime]:
    """Per class of layer, the candidate's kernel time beside eager's and torch.compile's (rows
    of `tools.job.gpu_measures.breakdown`), largest of the candidate's first. A class only a
    baseline has (the candidate fused it away) is listed with 0 for the candidate."""
    mine = _sums(candidate) or {}
    e, c = _sums(eager), _sums(compiled)
    whole = sum(mine.values()) or 1.0
    counts: dict[str, int] = {}
    for r in candidate:
        cls = kernel_class(str(r.get("name", "")))
        counts[cls] = counts.get(cls, 0) + 1
    layers = set(mine) | set(e or {}) | set(c or {})
    out = [
        ClassTime(
            layer=layer,
            candidate_us=round(mine.get(layer, 0.0), 3),
            share=round(mine.get(layer, 0.0) / whole, 4),
            eager_us=None if e is None else round(e.get(layer, 0.0), 3),
            compile_us=None if c is None else round(c.get(layer, 0.0), 3),
            kernels=counts.get(layer, 0),
        )
        for layer in layers
    ]
    out.sort(key=lambda t: (-t.candidate_us, -(t.best_us or 0.0), CLASSES.index(t.layer)))
    return out


def _us(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t / 1e3:.2f} ms" if t >= 1000 else f"{t:.1f} us"


def class_lines(rows: list[ClassTime], limit: int = 8) -> list[str]:
    """`convolution: 61% here, 12.10 ms; eager 8.02 ms, torch.compile 7.90 ms (1.53x the
    better)` per class, largest first."""
    lines = []
    for t in rows[:limit]:
        line = f"{t.layer}: {t.share:.0%} here, {_us(t.candidate_us)}"
        if t.eager_us is not None or t.compile_us is not None:
            line += f"; eager {_us(t.eager_us)}, torch.compile {_us(t.compile_us)}"
            best = t.best_us
            if best and t.candidate_us:
                line += f" ({t.candidate_us / best:.2f}x the better)"
            elif not t.candidate_us:
                line += " (no kernel of this class here)"
        lines.append(line)
    return lines


FAMILIES = {"convolution": "convolution/GEMM", "GEMM": "convolution/GEMM"}
"""Classes compared together when naming what loses: torch.compile runs a 1x1 convolution as a
GEMM (cuBLAS or its mm template) where this project runs a convolution kernel (level3/13 on the
H200: 3.34 ms of convolutions here against none in torch.compile, which spent 1.91 ms in GEMMs)."""


def slowest_class(rows: list[ClassTime]) -> str | None:
    """The class (convolutions and GEMMs together, `FAMILIES`) that loses the most time against
    the better baseline, as a sentence (why a network is slower than its baseline), or None
    when none loses 5% of the forward's kernel time."""
    whole = sum(t.candidate_us for t in rows)
    if whole <= 0:
        return None
    fam: dict[str, list] = {}
    for t in rows:
        f = fam.setdefault(FAMILIES.get(t.layer, t.layer), [0.0, None, None])
        f[0] += t.candidate_us
        for i, base in ((1, t.eager_us), (2, t.compile_us)):
            if base is not None:
                f[i] = (f[i] or 0.0) + base
    losses = []
    for layer, (here, eager, compiled) in fam.items():
        known = [b for b in (eager, compiled) if b is not None]
        if known:
            losses.append((here - min(known), layer, here, min(known)))
    if not losses:
        return None
    loss, layer, here, best = max(losses)
    if loss < 0.05 * whole:
        return None
    return (
        f"{layer} layers lose most: {_us(here)} here against {_us(best)} in the better "
        f"baseline ({loss / whole:.0%} of this forward's kernel time)"
    )
