"""What the reports say (issue 38, item 7): the candidates actually drawn per problem, round
ticks on 0/1 charts, how many elements are NaN or infinite in a mismatch, and `--generalize`'s
summary in the failing exception's own words."""

from __future__ import annotations

import json
import re

import pytest
import torch

from agent.html_report import Chart, nice_ticks, render_bench
from tests.test_html_report import GPU_BENCH
from tools.checks.compare import mismatch_report
from tools.core.problem import problem_from_source
from tools.core.results import Evidence, SourceError, Verdict
from tools.orchestrate.evaluate import summarize
from tools.orchestrate.generalize import generalize


def test_bench_html_says_how_many_candidates_were_drawn():
    report = json.loads((GPU_BENCH / "bench_compiler/report.json").read_text())
    # the compiler drafts one candidate a problem whatever --samples asked for
    report["settings"].update(samples=20, per_problem=1)
    html = render_bench(report)
    assert "1 candidate(s) per problem" in html
    assert "20 candidates per problem" not in html


def _y_tick_labels(svg: str) -> list[float]:
    """The y axis' labels: right-aligned text left of the axis."""
    return [float(v) for v in re.findall(r'text-anchor="end">([-0-9.e]+)</text><line x1="53"', svg)]


def test_charts_of_fractions_end_at_one_on_round_ticks():
    c = Chart("pass@k", [0, 1], [0, 1], ylabel="pass@k")
    c.bars(["@1", "@10"], [0.0, 1.0], ["#000", "#000"])
    ticks = _y_tick_labels(c.svg())
    assert ticks[0] == 0 and ticks[-1] == 1, ticks
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) == 1 and steps.pop() in (0.1, 0.2, 0.25, 0.5), ticks


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [(0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1]), (0, 0.3, [0, 0.1, 0.2, 0.3]), (0, 7.3, [0, 2, 4, 6, 8])],
)
def test_nice_ticks(lo, hi, expected):
    assert nice_ticks(lo, hi) == pytest.approx(expected)


def test_a_mismatch_of_nan_elements_says_so_in_its_figures():
    torch.manual_seed(0)
    expected = torch.randn(64, 128)
    got = expected.clone()
    got.view(-1)[torch.randperm(got.numel())[:712]] = float("nan")
    text = mismatch_report(got, expected, 1e-4, 1e-4).summary()
    # the figures no longer read "max abs err 0, mean abs err 0" for 712 wrong elements
    assert "712 NaN; max abs err inf, mean abs err inf, max rel err inf." in text, text
    assert (
        "712 of the 712 elements outside the tolerance are off by an infinite or undefined amount"
        in text
    )
    assert "the other 7480 elements: max abs err 0" in text


PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 16
dim = 256

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""

TORCH_ERROR = (
    "shape '[16, 256]' is invalid for input of size 2313\n"
    "\n"
    "See https://pytorch.org/docs/main/notes/custom_operators.html#testing-python-custom-operators "
    "for how to test an operator with opcheck"
)


def test_generalize_summary_names_what_failed_not_a_closing_url():
    problem = problem_from_source(PROBLEM, "relu.py")
    ok = Verdict(status="ok", compiled=True, correct=True, message="correct on 5 trials")
    err = SourceError(kind="RuntimeError", message=TORCH_ERROR, line=12)
    # what tools.orchestrate.verdict_rules makes of it: the error message's last line as the headline
    failing = Verdict(
        status="runtime_error", compiled=True, correct=False,
        message="the candidate raised at line 12: " + TORCH_ERROR.splitlines()[-1],
        evidence=Evidence(error=err),
    )  # fmt: skip
    out = generalize(problem, ok, lambda p: failing)
    line = summarize(out.status, out, {}, "best")
    assert "shape '[16, 256]' is invalid for input of size 2313" in line, line
    assert "RuntimeError" in line and "https://" not in line, line
    assert line.startswith("runtime_error: correct at the problem's sizes, but not at "), line
