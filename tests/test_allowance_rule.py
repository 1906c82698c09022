"""The fp64 rule's allowance (issue 35): what it may excuse, and how much.

Issue 35 measured, on a cancelling sum, an honest fp32 kernel with 1,702 of 3,072 elements
excused, and a kernel whose outputs were rounded to 15 mantissa bits judged `ok`. The rule had
no cancellation condition and no cap; it now has three limits (`tools.checks.fp64_rule`, applied by `tools.checks.compare`):
- the cancellation condition: an element is excused only where PyTorch's own fp32 error there
  (its largest over the draws) is at least a quarter of the tolerance (`cancelling`);
- the fp32 claim: an output in which the rule excused anything must keep every element within
  8x PyTorch's own error there (`fp32_claim_finding`): refuses the 15-bit outputs where rows
  cancel 10 to 1000 times (the precision check's 64x over one draw let them through);
- the cap: no more elements excused than PyTorch's own fp32 draws miss the tolerance by, plus 8
  (`excuse_cap`): refuses a kernel with 3x PyTorch's error everywhere (within the allowance at
  each element).
The honest kernel stays `ok` on both sums. The same kernels as Triton candidates through the
verifier are in the corpus (tests/adversarial/cancel_sum__*.py).

Session 17 (the H200: honest Triton GEMMs refused by the claim and the cap, which measured
PyTorch's summation order) made the scale of all three what fp32 arithmetic in any order errs
(max(D, 16 C), C the element's conditioning) and the cap count against the fp64 truth and where
that scale reaches the tolerance: the 15-bit outputs on graded rows and 3x PyTorch's error are
now accepted (a sequential fp32 sum errs as much; tests/test_fp32_any_order.py).

Where every element cancels by 1000 (`_pairs`), 15-bit outputs err less than PyTorch's own fp32
at every element: no rule per element or count can tell them from an honest kernel there, and
this file does not pretend to (docs/verification.md, the fp64 rule).
"""

from __future__ import annotations

import pytest
import torch

from tools.checks.compare import Tolerance, compare_outputs, fp64_accepted
from tools.checks.fp64_rule import (
    EXCUSE_CAP_FLOOR,
    ORDER_FACTOR,
    cancelling,
    excuse_cap,
    no_farther_from_fp64,
    outside_truth,
)
from tools.checks.freshness import fp32_error_allowance, fresh_finding, perturb_one_ulp
from tools.checks.precision import lower_precision, precision_sample

TOL = Tolerance()


class _RowSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


def _pairs(seed: int, rows: int = 3072, cols: int = 1024) -> torch.Tensor:
    """Every row cancels by about 1000: terms ~1e3 and their negatives, plus unit noise."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(rows, cols // 2, generator=g) * 1000
    return torch.cat([a, -a], 1) + torch.randn(rows, cols, generator=g)


def _graded(seed: int, rows: int = 1024, cols: int = 1024) -> torch.Tensor:
    """Rows that cancel by 10 to 1000 (log-uniform): tests/fixtures/adversarial_problems/
    cancel_sum.py's inputs."""
    g = torch.Generator().manual_seed(seed)
    s = 10 ** (1 + 2 * torch.rand(rows, 1, generator=g))
    a = torch.randn(rows, cols // 2, generator=g) * s
    return torch.cat([a, -a], 1) + torch.randn(rows, cols, generator=g)


def _blocked_fp32(x: torch.Tensor, lanes: int = 256) -> torch.Tensor:
    """An honest fp32 row sum in a Triton kernel's order: `lanes` partial sums, then a tree."""
    acc = torch.zeros(x.shape[0], lanes)
    for c in range(0, x.shape[1], lanes):
        acc += x[:, c : c + lanes]
    return acc.sum(1)


def _round_15_bits(y: torch.Tensor) -> torch.Tensor:
    """To nearest, keeping 15 of fp32's 23 stored mantissa bits (relative error <= 2^-16)."""
    return ((y.view(torch.int32) + 0x80) & -256).view(torch.float32)


def _judged(x: torch.Tensor, seed: int):
    """The references and the rule's draws for a row sum of `x`, as the judge makes them."""
    model = _RowSum()
    ref32, ref64 = model(x), model(x.double())
    made: dict = {}
    allowance = fp32_error_allowance(
        model, lambda: [x.clone()], [ref32], [ref64], seed=seed, record=made,
        tolerances=[TOL.for_dtype(torch.float32)],
    )  # fmt: skip
    assert len(allowance) == 1 and made["draws"] >= 1
    return ref32, ref64, allowance, [excuse_cap(made["outside"][0])]


@pytest.fixture(scope="module")
def pairs():
    x = _pairs(0)
    return (x, *_judged(x, seed=0))


@pytest.fixture(scope="module")
def graded():
    x = _graded(1)
    return (x, *_judged(x, seed=1))


def _diff(got, ref32, ref64, allowance, caps):
    return compare_outputs(
        [got], [ref32], TOL, trial=0, reference64=[ref64], allowance64=allowance, excuse_caps=caps
    )


def test_honest_fp32_on_a_sum_that_cancels_everywhere_is_excused_on_half_and_stays_ok(pairs):
    """The issue's first measurement (1,702 of 3,072 there; 1,264 on this sum): the rule is what
    makes an honest kernel verifiable here, and the verdict counts what it excused."""
    x, ref32, ref64, allowance, caps = pairs
    got = _blocked_fp32(x)
    plain = compare_outputs([got], [ref32], TOL, trial=0)
    assert plain.kind == "value" and plain.report.bad_count > x.shape[0] // 3
    diff = _diff(got, ref32, ref64, allowance, caps)
    assert diff.kind == "ok", diff.message
    assert diff.accepted == plain.report.bad_count  # every element outside was excused
    assert diff.excuse_cap == caps[0] and diff.accepted < caps[0]


def _sequential_fp32(x: torch.Tensor) -> torch.Tensor:
    """An honest fp32 row sum with one lane a row: the terms added in order."""
    acc = torch.zeros(x.shape[0])
    for c in range(x.shape[1]):
        acc = acc + x[:, c]
    return acc


def test_outputs_rounded_to_15_bits_where_rows_cancel_are_as_accurate_as_a_sequential_sum(graded):
    """Issue 35 refused 15-bit outputs here by holding every element to 8x PyTorch's own error
    over its draws (`ok` before that). Session 17 (the H200's honest Triton GEMMs refused by that
    claim) made the claim's scale what fp32 in any order errs (`tools.checks.fp64_rule.ORDER_FACTOR`):
    on these rows an honest fp32 sum with one lane a row errs as much as the rounded outputs do,
    so nothing in the outputs tells them apart, and both are accepted (docs/verification.md)."""
    x, ref32, ref64, allowance, caps = graded
    rounded = _round_15_bits(_blocked_fp32(x))
    sequential = _sequential_fp32(x)
    err = {k: (y.double() - ref64).abs().max() for k, y in (("15", rounded), ("seq", sequential))}
    assert err["seq"] >= err["15"] / 2, err  # the same class of error
    sample = precision_sample([ref32], [ref64], torch.Generator().manual_seed(0))
    for got in (rounded, sequential):
        diff = _diff(got, ref32, ref64, allowance, caps)
        assert diff.kind == "ok" and diff.accepted > 20, diff.message
        assert lower_precision([got], sample, allowance64=allowance) is None
    # bf16 outputs (8 bits) are not: the claim or the rule refuses them
    diff = _diff(x.sum(-1).bfloat16().float(), ref32, ref64, allowance, caps)
    assert diff.kind == "value", diff.message


@pytest.mark.parametrize("which", ["pairs", "graded"])
def test_three_times_pytorchs_error_is_fp32_but_thirty_times_is_not(which, request):
    """3x PyTorch's error at every element was refused by the cap (issue 35: more elements
    outside the tolerance than PyTorch's own draws have). A sequential fp32 order errs ~20x
    PyTorch's on a long GEMM (session 17), so the cap now also counts the elements where fp32 in
    some order can miss the tolerance (`tools.checks.fp64_rule.reach`), and 3x is accepted; 30x errs
    beyond the allowance (3x the fp32 scale) and stays refused."""
    x, ref32, ref64, allowance, caps = request.getfixturevalue(which)
    three = (ref64 + 3 * (ref32.double() - ref64)).float()
    n, _ = fp64_accepted(three, ref32, ref64, 1e-4, 1e-4, allowance64=allowance[0])
    assert n > caps[0]  # PyTorch's own counts alone would refuse it
    diff = _diff(three, ref32, ref64, allowance, caps)
    assert diff.kind == "ok" and diff.accepted == n, diff.message
    thirty = (ref64 + 30 * (ref32.double() - ref64)).float()
    assert _diff(thirty, ref32, ref64, allowance, caps).kind == "value"


def test_the_cancellation_condition_excuses_nothing_where_fp32_is_accurate():
    """Under a tolerance of a couple of ulps (rtol 1e-7), an element PyTorch computes exactly
    and the candidate 2 ulps off was excused by the rule's slack alone; it does not cancel, so
    it is now outside. Where PyTorch's own error reaches a quarter of the tolerance, it is."""
    r64 = torch.tensor([1.0, 1.0], dtype=torch.float64)
    e = torch.tensor([1.0, 1.0 + 2**-23])  # exact; then 1 ulp off (~ the tolerance, 1.7 ulps)
    g = torch.tensor([1.0 + 2**-22, 1.0 - 2**-23])
    tol = Tolerance(atol=0.0, rtol=1e-7)
    assert no_farther_from_fp64(g, e, r64).tolist() == [True, True]  # the old rule: both
    assert cancelling(e, r64, 0.0, 1e-7).tolist() == [False, True]
    diff = compare_outputs([g], [e], tol, trial=0, reference64=[r64])
    assert diff.kind == "value" and diff.report.bad_count == 1
    assert diff.report.first_bad[0]["index"] == [0]


def test_the_draws_count_how_many_elements_pytorch_itself_misses():
    """`record["outside"]`: the most elements one draw's fp32 output has outside the tolerance
    of the trial's fp32 reference; recomputed here from the same seeded perturbation."""
    x = _graded(2, rows=256, cols=1024)
    model = _RowSum()
    ref32, ref64 = model(x), model(x.double())
    made: dict = {}
    fp32_error_allowance(
        model, lambda: [x.clone()], [ref32], [ref64], seed=5, draws=1, record=made,
        tolerances=[(1e-4, 1e-4)],
    )  # fmt: skip
    moved = x.clone()
    perturb_one_ulp(moved, torch.Generator().manual_seed(5 * 1000 + 0))
    draw = model(moved).double()
    expect = int(((draw - ref32.double()).abs() > 1e-4 + 1e-4 * ref32.double().abs()).sum())
    assert expect > 0 and made["outside"] == [expect]
    assert excuse_cap(expect) == expect + EXCUSE_CAP_FLOOR
    none: dict = {}
    fp32_error_allowance(model, lambda: [x.clone()], [ref32], [ref64], seed=5, record=none)
    assert "outside" not in none  # no tolerance, no count


def test_the_freshness_check_holds_the_same_limits(graded):
    """The timing job's freshness check applies the judge's rule to a kernel the rule accepted:
    the fp32 claim there too, and the cap where the caller made it."""
    x, ref32, ref64, allowance, caps = graded
    honest = _blocked_fp32(x)
    kw = {"expected64": [ref64], "allowance64": allowance, "excuse_caps": caps}
    assert fresh_finding(honest, [ref32], 1e-4, 1e-4, **kw)["ok"]
    thirty = (ref64 + 30 * (ref32.double() - ref64)).float()
    assert not fresh_finding(thirty, [ref32], 1e-4, 1e-4, **kw)["ok"]
    bf16 = fresh_finding(x.sum(-1).bfloat16().float(), [ref32], 1e-4, 1e-4, **kw)
    assert not bf16["ok"], bf16["message"]


def test_one_draw_recomputed_gives_the_allowance_and_its_whole_record():
    """The allowance and every field of its record, recomputed here from the one seeded draw
    (issue 37 splits `fp32_error_allowance` into steps; this pins what it returns and records):
    D the larger of the trial's own fp32 error and the draw's, C how far the draw moves the
    exact result, the allowance `factor` * max(D, ORDER_FACTOR * C); the counts outside the
    tolerance of the fp32 reference and of the fp64 truth (the trial's own included)."""
    x = _graded(3, rows=64, cols=512)
    model = _RowSum()
    ref32, ref64 = model(x), model(x.double())
    atol, rtol = 1e-5, 1e-5
    made: dict = {}
    allowance = fp32_error_allowance(
        model, lambda: [x.clone()], [ref32], [ref64], seed=7, draws=1, factor=3.0, record=made,
        tolerances=[(atol, rtol)],
    )  # fmt: skip
    moved = x.clone()
    perturb_one_ulp(moved, torch.Generator().manual_seed(7 * 1000 + 0))
    d32, d64 = model(moved), model(moved.double())
    drawn = torch.fmax((ref32.double() - ref64).abs().float(), (d32.double() - d64).abs().float())
    spread = (d64 - ref64).abs().float()
    assert spread.max() > 0
    assert torch.equal(made["conditioning"][0], spread)
    assert torch.equal(allowance[0], torch.fmax(drawn, spread * ORDER_FACTOR) * 3.0)
    e = ref32.double()
    reference = int(((d32.double() - e).abs() > e.abs() * rtol + atol).sum())
    truth = max(outside_truth(ref32, ref64, atol, rtol), outside_truth(d32, d64, atol, rtol))
    assert reference != truth, (reference, truth)  # the two counts apart
    assert made["outside_reference"] == [reference] and made["outside_truth"] == [truth]
    assert made["outside"] == [max(reference, truth)] and made["draws"] == 1
