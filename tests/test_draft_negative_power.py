"""torch 2.13's value-range analysis raises on a power of constant negative exponent, which the
shape environment met while Inductor checked a convolution input's stride order in KernelBench
level3/7's dynamic draft (reduced to 32x32: "LoweringException: ValueError: Exponent must be
non-negative.", so the draft fell back to static sizes; benchmarks/results/level3_cpu_survey.md).
While the drafter runs Inductor (`inductor_patches.negative_powers_unbounded`), such a power
has unknown bounds instead, and everything else is unchanged."""

from __future__ import annotations

import pytest

sympy = pytest.importorskip("sympy")


def test_a_negative_power_has_unknown_bounds_while_drafting():
    from torch.utils._sympy.value_ranges import SymPyValueRangeAnalysis, ValueRanges

    from tools.draft.inductor_patches import negative_powers_unbounded

    def power(base: int, exponent: int):
        return SymPyValueRangeAnalysis.pow_by_natural(
            ValueRanges.wrap(sympy.Integer(base)), ValueRanges.wrap(sympy.Integer(exponent))
        )

    with pytest.raises(ValueError, match="Exponent must be non-negative"):
        power(3, -1)  # torch's own: what failed the draft
    with negative_powers_unbounded():
        assert power(3, -1) == ValueRanges.unknown_int()
        assert power(3, 2) == ValueRanges.wrap(sympy.Integer(9))  # the rest as before
        assert power(-2, 3) == ValueRanges.wrap(sympy.Integer(-8))
    with pytest.raises(ValueError, match="Exponent must be non-negative"):
        power(3, -1)  # restored afterwards


def test_the_capture_puts_it_in_place():
    """`capture._lowering_patches` enters it for every draft."""
    import contextlib

    from torch.utils._sympy.value_ranges import SymPyValueRangeAnalysis, ValueRanges

    from tools.draft.capture import _lowering_patches

    with contextlib.ExitStack() as stack:
        _lowering_patches(stack, "default", False, lambda code: None, lambda self: None)
        bounds = SymPyValueRangeAnalysis.pow_by_natural(
            ValueRanges.wrap(sympy.Integer(3)), ValueRanges.wrap(sympy.Integer(-1))
        )
    assert bounds == ValueRanges.unknown_int()
