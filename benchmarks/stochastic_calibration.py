"""Calibrate the statistical verification of stochastic problems (`tools.checks.stochastic`) on the CPU.

For a handful of small stochastic models it runs the judge's per-trial tests in-process on
emulated candidates (PyTorch code with a random stream of its own, like a Triton kernel's
`tl.rand`): honest ones give the false-reject rate, wrong or cheating ones the power. No
sandbox and no Triton: what is measured is the statistics, on the very functions the judge runs
(`StochasticTrial`). A trial is `STOCHASTIC_RUNS` reference runs and as many candidate runs (or
one, as in an unannounced trial).

    python benchmarks/stochastic_calibration.py --trials 400 --out benchmarks/results/stochastic_calibration_cpu.md
"""

from __future__ import annotations

import argparse
import collections
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.checks.stochastic import STOCHASTIC_RUNS, StochasticTrial  # noqa: E402

Rand = Callable[[tuple[int, ...]], torch.Tensor]
"""Uniform [0, 1) draws of a shape: the reference's global RNG, or a candidate's own stream."""


def _drop(y: torch.Tensor, p: float, rand: Rand, scale: bool = True) -> torch.Tensor:
    keep = (rand(tuple(y.shape)) >= p).to(y.dtype)
    return y * keep / (1 - p) if scale else y * keep


class Case:
    """A stochastic model: `reference(x)` draws from torch's global RNG (as the problem's Model
    does); `honest(x, rand)` samples the same distribution from another stream."""

    def __init__(
        self, name: str, shape: tuple[int, ...], reference, honest, cheats=None, inputs=None
    ):
        self.name, self.shape = name, shape
        self.reference, self.honest = reference, honest
        self.cheats = cheats or {}
        self.inputs = inputs or (lambda: torch.rand(shape))


def cases() -> list[Case]:
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 96)
    lin_c = torch.nn.Linear(64, 48)
    lin_big = torch.nn.Linear(256, 512)

    def lds(y, rand, p=0.2, scale=True):
        return torch.softmax(_drop(y, p, rand, scale), 1)

    def row_rand(shape):  # one mask for every row
        return torch.rand(shape[1:]).expand(shape)

    def col_rand(shape):  # one mask for every column
        return torch.rand(shape[0], 1).expand(shape)

    g_fixed = torch.Generator()

    def fixed_rand(shape):  # the same mask on every call
        g_fixed.manual_seed(1234)
        return torch.rand(shape, generator=g_fixed)

    expected_cache: dict[int, torch.Tensor] = {}

    def mean_output(x):  # the expected output, estimated once: deterministic
        key = id(x)
        if key not in expected_cache:
            expected_cache.clear()
            expected_cache[key] = torch.stack(
                [torch.softmax(F.dropout(lin(x), 0.2, True), 1) for _ in range(512)]
            ).mean(0)
        return expected_cache[key]

    def half_rand(shape):  # dropout only on the first half of the columns
        u = torch.rand(shape)
        u[:, shape[1] // 2 :] = 1.0
        return u

    return [
        Case(
            "linear_dropout_softmax (16x64 -> 96, p=0.2: the test problem)",
            (16, 64),
            lambda x: torch.softmax(F.dropout(lin(x), 0.2, True), 1),
            lambda x, r: lds(lin(x), r),
            {
                "no dropout": lambda x, r: torch.softmax(lin(x), 1),
                "p=0.1 instead of 0.2": lambda x, r: lds(lin(x), r, p=0.1),
                "p=0.25 instead of 0.2": lambda x, r: lds(lin(x), r, p=0.25),
                "no 1/(1-p) scaling": lambda x, r: lds(lin(x), r, scale=False),
                "the same mask every call": lambda x, r: lds(lin(x), fixed_rand),
                "one mask for every row": lambda x, r: lds(lin(x), row_rand),
                "one mask for every column": lambda x, r: lds(lin(x), col_rand),
                "the expected output (deterministic)": lambda x, r: mean_output(x),
                "dropout on half the columns only": lambda x, r: lds(lin(x), half_rand),
            },
        ),
        Case(
            "linear_dropout_softmax (64x256 -> 512, p=0.2)",
            (64, 256),
            lambda x: torch.softmax(F.dropout(lin_big(x), 0.2, True), 1),
            lambda x, r: lds(lin_big(x), r),
            {
                "p=0.15 instead of 0.2": lambda x, r: lds(lin_big(x), r, p=0.15),
                "no 1/(1-p) scaling": lambda x, r: lds(lin_big(x), r, scale=False),
                "one mask for every row": lambda x, r: lds(lin_big(x), row_rand),
            },
        ),
        Case(
            "dropout (32x64, p=0.5)",
            (32, 64),
            lambda x: F.dropout(x, 0.5, True),
            lambda x, r: _drop(x, 0.5, r),
            {"p=0.4 instead of 0.5": lambda x, r: _drop(x, 0.4, r)},
        ),
        Case(
            "dropout then linear (16x64 -> 48: outputs of a row share the mask)",
            (16, 64),
            lambda x: lin_c(F.dropout(x, 0.2, True)),
            lambda x, r: lin_c(_drop(x, 0.2, r)),
            {"one mask for every row": lambda x, r: lin_c(_drop(x, 0.2, row_rand))},
        ),
        Case(
            "x * rand(1) (8x32: one draw for all elements)",
            (8, 32),
            lambda x: x * torch.rand(1),
            lambda x, r: x * r((1,)),
            {"rand(1) ** 0.8": lambda x, r: x * r((1,)) ** 0.8},
        ),
        Case(
            "dropout (32x64, p=0.02: sparse randomness)",
            (32, 64),
            lambda x: F.dropout(x, 0.02, True),
            lambda x, r: _drop(x, 0.02, r),
        ),
        Case(
            "x + 0.01 randn_like(x) (16x64)",
            (16, 64),
            lambda x: x + 0.01 * torch.randn_like(x),
            lambda x, r: x + 0.01 * _normal(r, tuple(x.shape)),
            {"noise sd 0.012": lambda x, r: x + 0.012 * _normal(r, tuple(x.shape))},
        ),
        Case(
            "bernoulli(sigmoid(x)) (32x32: 0/1 outputs)",
            (32, 32),
            lambda x: torch.bernoulli(torch.sigmoid(x)),
            lambda x, r: (r(tuple(x.shape)) < torch.sigmoid(x)).float(),
            {
                "bernoulli(sigmoid(x) + 0.05)": lambda x, r: (
                    r(tuple(x.shape)) < torch.sigmoid(x) + 0.05
                ).float()
            },
            inputs=lambda: torch.randn(32, 32),
        ),
    ]


def _normal(rand: Rand, shape: tuple[int, ...]) -> torch.Tensor:
    u1, u2 = rand(shape).clamp(min=1e-12), rand(shape)
    return torch.sqrt(-2 * torch.log(u1)) * torch.cos(2 * torch.pi * u2)


def one_trial(
    case: Case, candidate, cand_runs: int, gen: torch.Generator
) -> tuple[bool, str, dict]:
    with torch.no_grad():
        x = case.inputs()
        first = case.reference(x)
        trial = StochasticTrial([first], "cpu")
        for _ in range(STOCHASTIC_RUNS):
            trial.add_reference([case.reference(x)])

        def rand(shape):
            return torch.rand(shape, generator=gen)

        for _ in range(cand_runs):
            trial.add_candidate([candidate(x, rand)])
        f = trial.finish([(1e-4, 1e-4)])
    return f.ok, f.message, f.stats


TESTS = (
    ("distinct output", "repeats (d)"),
    ("standard errors", "largest z (a)"),
    ("per-element variances differ systematically", "variance (b)"),
    ("per-element variances differ from", "variance spread (b)"),
    ("per-element means", "mean (a)"),
    ("other means", "projection mean (c)"),
    ("as much", "projection variance (c)"),
    ("vary differently", "projection variance spread (c)"),
    ("did not vary", "deterministic elements"),
    ("NaN/Inf", "non-finite"),
    ("not a draw", "single-run distance"),
)
"""A fragment of each test's message (tools.checks.stochastic) and the test's name in the tables."""


def which_test(message: str) -> str:
    for fragment, name in TESTS:
        if fragment in message:
            return name
    return message[:60]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200, help="null trials per case")
    ap.add_argument(
        "--single", type=int, default=0, help="null one-run (unannounced) trials per case"
    )
    ap.add_argument("--power-trials", type=int, default=20, help="trials per cheat")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(7)
    lines = [
        "# Stochastic verification: false rejects and power (CPU, in-process)",
        "",
        f"`python benchmarks/stochastic_calibration.py --trials {args.trials} --single "
        f"{args.single} --power-trials {args.power_trials}` on {platform.machine()}, torch "
        f"{torch.__version__}, {time.strftime('%Y-%m-%d')}. A trial: {STOCHASTIC_RUNS} reference "
        "runs and as many candidate runs on one input set (tools.checks.stochastic.StochasticTrial). "
        "Honest candidates sample the reference's distribution from a stream of their own; the "
        "others are wrong or cheat. Tolerance fp32 (1e-4).",
        "",
        "## Honest candidates (false rejects)",
        "",
        "| model | trials | rejected | one-run trials | rejected | s a trial |",
        "|---|---|---|---|---|---|",
    ]
    total_null = total_rej = 0
    power_rows = []
    for case in cases():
        t0 = time.perf_counter()
        rejected = collections.Counter()
        for _ in range(args.trials):
            ok, msg, _ = one_trial(case, case.honest, STOCHASTIC_RUNS, gen)
            if not ok:
                rejected[which_test(msg)] += 1
                print(f"  false reject: {case.name}: {msg}", file=sys.stderr)
        per = (time.perf_counter() - t0) / max(args.trials, 1)
        single_rej = 0
        for _ in range(args.single):
            ok, msg, _ = one_trial(case, case.honest, 1, gen)
            if not ok:
                single_rej += 1
                print(f"  false reject (one run): {case.name}: {msg}", file=sys.stderr)
        n_rej = sum(rejected.values())
        total_null += args.trials + args.single
        total_rej += n_rej + single_rej
        shown = f"{n_rej}" + (
            f" ({', '.join(f'{k}: {v}' for k, v in rejected.items())})" if n_rej else ""
        )
        lines.append(
            f"| {case.name} | {args.trials} | {shown} | {args.single} | {single_rej} | {per:.2f} |"
        )
        print(lines[-1], file=sys.stderr)
        for cheat, fn in case.cheats.items():
            caught = collections.Counter()
            for _ in range(args.power_trials):
                ok, msg, _ = one_trial(case, fn, STOCHASTIC_RUNS, gen)
                if not ok:
                    caught[which_test(msg)] += 1
            n = sum(caught.values())
            by = ", ".join(f"{k}: {v}" for k, v in caught.most_common())
            power_rows.append(f"| {case.name} | {cheat} | {n} of {args.power_trials} | {by} |")
            print(power_rows[-1], file=sys.stderr)
    lines += [
        "",
        f"All honest trials: {total_rej} rejected of {total_null}.",
        "",
        "## Wrong or cheating candidates (power: trials caught)",
        "",
        "| model | candidate | caught | by (test: trials) |",
        "|---|---|---|---|",
        *power_rows,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
