"""The constructor rule (issues 33/34): the audit of the candidate's constructor and of the
weight copy (job-process side; `tools.checks.audit.constructor_audited` puts it in place).
Setup from constants and initialisation of the weights pass; compute on the weights is a fold.
"""

from __future__ import annotations

from collections import Counter

import torch

from tools.checks.audit_mode import AuditMode, LaunchCounter, reads_tensor_values
from tools.checks.audit_ops import (
    ALLOC_OPS,
    ATEN_NAMESPACES,
    LIBRARY_OPS,
    SCALAR_READ_LIMIT,
    VIEW_OPS,
    op_name,
)

# The constructor rule (issue 33/34). The constructor runs before any trial's seed exists, so what
# it computes from constants (a causal mask made with `torch.tril`, a positional-encoding table,
# an index table) cannot depend on the inputs: it is setup, as in the reference's own `__init__`.
# What it must not do is work on the *weights*: values drawn at random under the harness's seed
# (and, during the weight copy, the reference's parameters). `W2 @ W1` folded in `__init__` (by a
# library call, or by whitelisted arithmetic in a Python loop) moves forward's work out of the
# audit. So every tensor's values carry a *lineage*: the random draws (or copied reference
# weights) they were computed from. Views and copies keep it (a pre-transposed weight is a
# re-layout, not compute); compute on values of no lineage is setup; compute on values of a
# lineage is allowed only as initialisation: an elementwise op of `torch.nn.init`
# (INIT_ARITHMETIC) on ONE seed-dependent tensor, with Python scalars or 0-d/1-element tensors
# beside it. Combining two seed-dependent tensors, or one with a non-scalar tensor of constants,
# or any other op on them (matmul, sum, conv, indexing), is a fold: `cheat`.
INIT_ARITHMETIC = frozenset(
    {
        "mul_",
        "add_",
        "sub_",
        "div_",
        "clamp_",
        "clamp_min_",
        "clamp_max_",
        "erfinv_",
        "abs_",
        "neg_",
        "sqrt_",
        "mul",
        "add",
        "sub",
        "div",
        "neg",
        "abs",
        "sign",
        "sqrt",
        "erf",
        "erfinv",
        "clamp",
        "reciprocal",
        # range checks (trunc_normal_ validates its bounds)
        "lt",
        "gt",
        "le",
        "ge",
        "eq",
        "ne",
        "any",
        "all",
    }
)
RANDOM_FILLS = frozenset(
    {
        "uniform_",
        "normal_",
        "bernoulli_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
    }
)
VALUE_PRESERVING = frozenset({"_cudnn_rnn_flatten_weight", "cat", "stack", "flip", "roll"})
"""Ops that move values without computing new ones (re-layout of a weight, an RNN's flat weight
buffer): their outputs keep their inputs' lineage and they are not compute."""


def _storage_key(t: torch.Tensor) -> tuple | None:
    if t.layout != torch.strided or t.device.type == "meta":
        return None
    try:
        return (t.device.type, t.device.index, t.untyped_storage().data_ptr())
    except Exception:  # noqa: BLE001 - a tensor without storage (functional, sparse...)
        return None


def _view_key(t: torch.Tensor) -> tuple:
    return (_storage_key(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()))


def _covers_storage(t: torch.Tensor) -> bool:
    try:
        return (
            t.is_contiguous()
            and t.storage_offset() == 0
            and t.numel() * t.element_size() == t.untyped_storage().nbytes()
        )
    except Exception:  # noqa: BLE001
        return False


class ConstructorAuditMode(AuditMode):
    """The audit of the constructor and the weight copy: `AuditMode`'s classification, with
    compute judged by the constructor rule above instead of refused outright. Lineages are
    kept per storage (a view written in place taints its base); every tensor seen is held
    until the mode ends, so a storage address is never reused for another tensor meanwhile."""

    def __init__(self, launches: LaunchCounter | None = None) -> None:
        super().__init__(poison=False, launches=launches)
        self.lineage: dict[tuple, frozenset[int]] = {}
        self._held: list[torch.Tensor] = []
        self._next = 0
        self.folds: Counter[str] = Counter()
        """Compute on seed-dependent values other than initialisation: the cheats."""
        self.python_reads = 0

    # -- lineages
    def _new_lineage(self) -> frozenset[int]:
        self._next += 1
        return frozenset({self._next})

    def mark(self, t: torch.Tensor) -> None:
        """Give `t` a lineage of its own (a reference weight about to be copied)."""
        key = _storage_key(t)
        if key is not None and t.is_floating_point():
            self._held.append(t)
            self.lineage[key] = self.lineage.get(key, frozenset()) | self._new_lineage()

    def of(self, t: object) -> frozenset[int]:
        if not isinstance(t, torch.Tensor):
            return frozenset()
        key = _storage_key(t)
        return self.lineage.get(key, frozenset()) if key is not None else frozenset()

    def _set(self, t: object, lin: frozenset[int], replace: bool = False) -> None:
        if not isinstance(t, torch.Tensor):
            return
        key = _storage_key(t)
        if key is None:
            return
        self._held.append(t)
        if replace:
            self.lineage[key] = lin
        elif lin:
            self.lineage[key] = self.lineage.get(key, frozenset()) | lin

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils._pytree import tree_flatten

        kwargs = kwargs or {}
        name = op_name(func)
        namespace = getattr(func, "namespace", "aten")
        flat_in = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        for a in flat_in:
            self._held.append(a)
        before = self.launches.count if self.launches is not None else 0
        out = func(*args, **kwargs)
        flat_out = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        inplace = name.endswith("_") or "out" in kwargs
        target = args[0] if inplace and args and isinstance(args[0], torch.Tensor) else None
        if "out" in kwargs and isinstance(kwargs["out"], torch.Tensor):
            target = kwargs["out"]
        seeded = [a for a in flat_in if a.is_floating_point() and self.of(a)]
        union = frozenset().union(*(self.of(a) for a in flat_in)) if flat_in else frozenset()

        if namespace not in ATEN_NAMESPACES:
            launched = self.launches is not None and self.launches.count > before
            if not launched:
                self.compute[f"{namespace}.{name} (custom operator, no Triton launch inside)"] += 1
            for o in flat_out:
                self._set(o, union)
            return out
        if name in RANDOM_FILLS and not reads_tensor_values(name, args, kwargs):
            fresh = self._new_lineage()
            if target is not None:
                # a fill of the whole storage replaces its values (a re-initialised weight is
                # one draw, not two); a fill of a slice adds a draw to the rest
                self._set(target, fresh, replace=_covers_storage(target))
            for o in flat_out:
                self._set(o, fresh)
            return out
        if name in ("_local_scalar_dense", "item"):
            if seeded:
                self.python_reads += 1
                if self.python_reads > SCALAR_READ_LIMIT:
                    self.folds["the weights' values read into Python (.item()/float())"] += 1
            return out
        if name in ("lift_fresh", "lift_fresh_copy"):
            return out  # a table from Python values: constants (weights read into Python are counted above)
        if name in ALLOC_OPS or name in VIEW_OPS or name in VALUE_PRESERVING:
            if name == "copy_" and target is not None:
                self._set(target, union)
            elif target is not None:
                self._set(target, union)
            for o in flat_out:
                self._set(o, union)
            return out
        self._compute(name, flat_in, flat_out, seeded, union)
        return out

    def _compute(
        self,
        name: str,
        flat_in: list[torch.Tensor],
        flat_out: list[torch.Tensor],
        seeded: list[torch.Tensor],
        union: frozenset[int],
    ) -> None:
        """An aten compute op in the constructor, judged by the constructor rule: setup from
        constants, or initialisation arithmetic on one draw (a scalar operand at most), keeps
        its lineage; anything else on seed-dependent values is a fold (`folds`)."""
        if not seeded:
            for o in flat_out:  # setup from constants
                self._set(o, union)
            return
        lineages = frozenset().union(*(self.of(a) for a in seeded))
        others = [a for a in flat_in if a.is_floating_point() and not self.of(a)]
        # One seed-dependent operand (or the same view twice, `x * x`): two slices of one draw
        # multiplied together are a fold as much as two weights are.
        single = len({_view_key(a) for a in seeded}) == 1
        if (
            name in INIT_ARITHMETIC
            and len(lineages) == 1
            and single
            and all(a.numel() <= 1 for a in others)
        ):
            for o in flat_out:
                self._set(o, lineages)
            return
        label = "library" if name in LIBRARY_OPS else "compute"
        why = (
            f"{len(lineages)} random draws / copied weights combined"
            if len(lineages) > 1
            else "the weights combined with a tensor of constants"
            if any(a.numel() > 1 for a in others)
            else "not parameter initialisation"
        )
        self.folds[
            f"aten.{name} on seed-dependent values: weights or random draws ({label}: {why})"
        ] += 1
        for o in flat_out:
            self._set(o, union)

    def launch_arguments(self, name: str, args: tuple, kwargs: dict) -> None:
        seeded = [
            a
            for a in list(args) + list(kwargs.values())
            if isinstance(a, torch.Tensor) and a.is_floating_point() and self.of(a)
        ]
        if seeded:
            self.folds[f"Triton kernel {name} run on the weights in the constructor"] += 1

    def release(self) -> None:
        self._held.clear()
        self.lineage.clear()
