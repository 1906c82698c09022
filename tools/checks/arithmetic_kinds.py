"""The names of the arithmetics (`ARITHMETICS`), what the fp32 contract admits, and the
reading of a compiled kernel (`from_ttir`, `from_cache_dir`). `tools.checks.arithmetic` is the entry
point; `tools.checks.arithmetic_source` reads the source."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

ARITHMETICS: dict[str, str] = {
    "fp32": "fp32 arithmetic: FMA, elementwise math, reductions, tl.dot with input_precision='ieee'",
    "fp64": "fp64 arithmetic (values cast to float64)",
    "tf32x3": "three TF32 tensor-core products per fp32 product (input_precision='tf32x3', or the "
    "operands split by hand into a TF32 part and the rest): about fp32's accuracy",
    "bf16x6": "six bf16 products per fp32 product (input_precision='bf16x6'): about fp32's accuracy",
    "bf16x3": "three bf16 products of split operands (input_precision='bf16x3', or split by hand): "
    "about 2**-16 relative per product, fp32 accumulation",
    "tf32": "one TF32 product (tl.dot's default on fp32 data, input_precision='tf32', "
    "allow_tf32=True): 10-bit mantissa, about 1e-3 relative",
    "bf16": "bf16 values or products (a cast or mantissa mask to bfloat16): 8-bit mantissa",
    "fp16": "fp16 values or products (a cast to float16): 11-bit mantissa",
    "fp8": "fp8 values or products (a cast to a float8 type, tl.dot_scaled)",
    "int8": "int8 products",
    "reduced": "fp32 values with mantissa bits cleared by hand (a bit mask that is neither TF32's "
    "nor bf16's)",
    "unknown": "a tl.dot whose input precision the code computes at run time (no compiled kernel "
    "of it seen), or inline assembly other than a cvt to TF32/bf16/fp16",
}
"""Every name `Verdict.arithmetic` may hold, in the order it lists them."""

FP32_CONTRACT: frozenset[str] = frozenset({"fp32", "fp64", "tf32x3", "bf16x6", "bf16x3"})
"""The arithmetics the fp32 contract admits: their error per product is at most about 2**-16
relative with fp32 accumulation, so whether a kernel is accurate enough is for the per-element
precision check at every input scale to say. tf32, bf16, fp16, fp8, int8 and `reduced` round an
operand to 11 or fewer bits, an error that grows with the reduction: outside the contract (the
reports flag them). `unknown` is neither: the precision check judges it as for any kernel."""

_PRECISIONS = {
    "ieee": "fp32",
    "tf32": "tf32",
    "tf32x3": "tf32x3",
    "bf16x3": "bf16x3",
    "bf16x6": "bf16x6",
}
NARROW = ("bf16", "fp16", "fp8", "int8")
SPLITS = {"bf16": "bf16x3", "tf32": "tf32x3"}


def ordered(names: Iterable[str]) -> list[str]:
    """`names` once each, in `ARITHMETICS` order."""
    found = set(names)
    return [n for n in ARITHMETICS if n in found]


def outside_fp32_contract(names: Iterable[str]) -> list[str]:
    """The arithmetics among `names` that the fp32 contract does not admit."""
    return [n for n in ordered(names) if n not in FP32_CONTRACT and n != "unknown"]


def dtype_name(value: Any) -> str | None:
    """`bf16`, `fp16`, `fp8`, `fp32`, `fp64`, `int8` for a dtype's name in Triton, MLIR, PyTorch
    or a recorded constexpr (`tl.bfloat16`, `bf16`, `torch.float16`, `f8E4M3FN`); else None."""
    text = str(value).lower().rsplit(".", 1)[-1].removeprefix("dtype:")
    if text in ("bfloat16", "bf16"):
        return "bf16"
    if text in ("float16", "fp16", "f16", "half"):
        return "fp16"
    if text.startswith(("float8", "fp8", "f8")):
        return "fp8"
    if text in ("float32", "fp32", "f32", "float"):
        return "fp32"
    if text in ("float64", "fp64", "f64", "double"):
        return "fp64"
    if text in ("int8", "uint8", "i8", "ui8"):
        return "int8"
    return None


def asm_kind(asm: str) -> str:
    """What inline PTX rounds to: a `cvt` to TF32, bf16 or fp16 (a split by hand), else
    `unknown` (assembly can compute in anything)."""
    for pattern, kind in ((r"cvt\.\w*\.?tf32", "tf32"), (r"cvt\.\w*\.?bf16", "bf16"),
                          (r"cvt\.\w*\.?f16", "fp16")):  # fmt: skip
        if re.search(pattern, asm):
            return kind
    return "unknown"


def mask_kind(value: int) -> str | None:
    """A bit mask that clears the low k bits of an fp32 (`-2**k`, or its unsigned spelling):
    bf16's 16, TF32's 13, `reduced` for another k from 1 to 22."""
    value &= 0xFFFFFFFF
    low = (-value) & 0xFFFFFFFF
    if value == 0 or low & (low - 1):
        return None
    k = low.bit_length() - 1
    return {16: "bf16", 13: "tf32"}.get(k, "reduced" if 1 <= k <= 22 else None)


class Findings:
    """What one kernel (or the whole candidate) computes in: `labels` (ARITHMETICS names) and
    `splits` (the rounding kinds, bf16 / tf32, that have a residual `x - round(x)`)."""

    def __init__(self) -> None:
        self.labels: set[str] = set()
        self.splits: set[str] = set()

    def update(self, other: Findings) -> None:
        self.labels |= other.labels
        self.splits |= other.splits

    def names(self) -> list[str]:
        """The labels, split roundings named as their x3 scheme; `fp32` where nothing else."""
        labels = {SPLITS[x] if x in self.splits and x in SPLITS else x for x in self.labels}
        return ordered(labels or {"fp32"})


# ---------------------------------------------------------------------------------------------
# The compiled kernel (TTIR)

_DEF = re.compile(r"^\s*(%[\w.#$-]+)(?::\d+)?\s*=\s*([\w.]+)\b(.*)$")
_OPERAND = re.compile(r"%[\w.#$-]+")
_TYPE = re.compile(r"tensor<(?:[\d?]+x)*(\w+)(?:,[^>]*)?>|(?<![\w<])(f8\w+|bf16|f16|f32|f64|i8)\b")
_CONST = re.compile(r"arith\.constant\s+(?:dense<)?(-?\d+)>?\s*:\s*(?:tensor<[\dx]*)?i32")


def from_ttir(text: str) -> Findings:
    """The arithmetic of one compiled kernel, from its TTIR (`compiled.asm["ttir"]`, or the
    `.ttir` file in its Triton cache): `tt.dot` operand types and `inputPrecision` (absent:
    ieee), `tt.dot_scaled`, narrowing `arith.truncf` / `tt.fp_to_fp`, mantissa masks
    (`arith.andi` with `-2**k`) and residuals (`arith.subf` of a rounded value)."""
    defs: dict[str, tuple[str, list[str], str]] = {}
    masks: dict[str, int] = {}
    for line in text.splitlines():
        m = _DEF.match(line.split(" loc(")[0])
        if not m:
            continue
        name, op, rest = m.groups()
        operands = _OPERAND.findall(rest.split(":")[0])
        defs[name] = (op, operands, rest)
        const = _CONST.search(op + rest)
        if op == "arith.constant" and const:
            masks[name] = int(const.group(1))
    out = Findings()
    for op, operands, rest in defs.values():
        types = [dtype_name(t[0] or t[1]) for t in _TYPE.findall(rest.split(":", 1)[-1])]
        if op == "tt.dot":
            out.labels |= dot_labels(types[0] if types else None, [_ir_precision(rest)])
        elif op == "tt.dot_scaled":
            out.labels.add("fp8")
        elif op == "tt.elementwise_inline_asm":
            out.labels.add(asm_kind(rest))
        elif op in ("arith.truncf", "tt.fp_to_fp") and types and types[-1] in NARROW:
            out.labels.add(types[-1])
        elif op == "arith.andi":
            kind = _ir_mask(operands, defs, masks)
            if kind:
                out.labels.add(kind)
        elif op == "arith.subf" and len(operands) == 2:
            kind = _ir_rounding(operands[1], defs, masks, 8)
            if kind in SPLITS:
                out.splits.add(kind)
    if not out.labels:  # no dot, no narrowing: fp32 arithmetic
        out.labels.add("fp32")
    return out


def _ir_mask(operands: list[str], defs: dict, masks: dict) -> str | None:
    """The rounding an `arith.andi` makes: a mask clearing low bits of bits that come from a
    bitcast (an index aligned with `& -16` is no rounding)."""
    kind = next((mask_kind(masks[o]) for o in operands if o in masks), None)
    others = [o for o in operands if o not in masks]
    return kind if kind and any(_from_bitcast(o, defs, 6) for o in others) else None


def _from_bitcast(name: str, defs: dict, depth: int) -> bool:
    if depth <= 0 or name not in defs:
        return False
    op, operands, _ = defs[name]
    return op == "tt.bitcast" or any(_from_bitcast(o, defs, depth - 1) for o in operands)


def _ir_precision(rest: str) -> str:
    m = re.search(r"inputPrecision\s*=\s*(\w+)", rest)
    return m.group(1).lower() if m else "ieee"


def _ir_rounding(name: str, defs: dict, masks: dict, depth: int) -> str | None:
    """The rounding kind behind SSA value `name`: a narrowing cast or a mantissa mask, through
    bitcasts and widening casts."""
    if depth <= 0 or name not in defs:
        return None
    op, operands, rest = defs[name]
    if op == "arith.truncf":
        types = [dtype_name(t[0] or t[1]) for t in _TYPE.findall(rest.split(":", 1)[-1])]
        return types[-1] if types and types[-1] in NARROW else None
    if op == "arith.andi":
        return _ir_mask(operands, defs, masks)
    if op == "tt.elementwise_inline_asm":
        kind = asm_kind(rest)
        return kind if kind != "unknown" else None
    if op in ("tt.bitcast", "arith.bitcast", "arith.extf") and operands:
        return _ir_rounding(operands[0], defs, masks, depth - 1)
    return None


def dot_labels(kind: str | None, precisions: Iterable[Any] | None) -> set[str]:
    """A dot's arithmetics from its operands' kind (a dtype, or the rounding they went
    through) and the input precisions it can take (None: unresolved; a None among them: the
    default, TF32)."""
    if kind in NARROW or kind in ("tf32", "reduced", "fp64"):
        return {kind}
    if precisions is None:
        return {"unknown"}
    return {"tf32" if p is None else _PRECISIONS.get(str(p).lower(), "unknown") for p in precisions}


def from_cache_dir(path: str | os.PathLike[str] | None) -> dict[str, Findings]:
    """Kernel name -> its arithmetic, from every `<hash>/<kernel>.ttir` in a Triton cache
    directory (a job's kept cache: `Verifier.verify(..., triton_cache_out=)`); {} without one."""
    out: dict[str, Findings] = {}
    if not path or not os.path.isdir(path):
        return out
    for root, _, files in os.walk(path):
        for f in files:
            if f.endswith(".ttir"):
                try:
                    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                        found = from_ttir(fh.read())
                except OSError:
                    continue
                out.setdefault(f[: -len(".ttir")], Findings()).update(found)
    return out
