"""How often the judge's fp64 rule lets an honest fp32 kernel through, and a wrong one, with one
draw of PyTorch's fp32 error (the trial's own) against `1 + FP32_DRAWS` draws (the trial's and
copies of its inputs an fp32 ulp away: `tools.checks.freshness.fp32_error_allowance`). CPU only.

    python benchmarks/fp64_draws_calibration.py [--seeds 200] [--gemm-seeds 8] [--out FILE]

Two problems:
- **cancel**: the mat-vec of `tests/test_fp64_accepted.py`, whose first 16 rows cancel (terms
  ~1e4, sums ~1e2). The honest kernel sums in a Triton-like fp32 order (512 lanes over 4
  blocks, then a tree); the wrong ones err 10x or 3x an fp32 error on the cancelling rows, or
  round their inputs to TF32 there.
- **gemm_sum**: level2/14's computation (x @ W.T, / 2, sum over the 8,192 outputs, * 1.5) at
  its published size (1,024 rows). The honest kernels: W's columns summed first (fp32), and the GEMM
  in 4 split-K partial sums then the row sum; the wrong one errs 10x an fp32 error.

Per kernel and rule, the share of runs whose every element outside the tolerance (1e-4, 1e-4)
was accepted: for an honest kernel the share of runs verified `ok` (a trial counts, so the rate
of a 5-trial verification is about this to the 5th power), for a wrong one the share that got
through. "mean error / PyTorch's": the kernel's mean error against fp64 over PyTorch's (MKL's
GEMM here; cuBLAS errs more), averaged over the runs. A kernel less accurate than PyTorch on
average (W's columns summed first, on this CPU) is still refused where it errs more than all of
PyTorch's draws: the rule holds a kernel to PyTorch's accuracy, not to the tolerance.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.checks.compare import Tolerance, compare_outputs  # noqa: E402
from tools.checks.freshness import (  # noqa: E402
    ALLOWANCE_FACTOR,
    FP32_DRAWS,
    fp32_error_allowance,
    fp64_outputs,
)

TOL = Tolerance()
CONFIGS = [(4, 1.0), (8, 1.0), (8, 2.0), (FP32_DRAWS, ALLOWANCE_FACTOR)]
"""(extra draws, factor) of the allowance compared; the last is the judge's."""
ROWS = 1024
"""level2/14's batch: its published size."""


class MatVec(torch.nn.Module):
    def forward(self, x, w):
        return x @ w


class GemmSum(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight)

    def forward(self, x):
        x = torch.matmul(x, self.weight.T) / 2
        return torch.sum(x, dim=1, keepdim=True) * 1.5


def cancel_inputs(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    b, k = 32, 2048
    w = torch.randn(k, generator=g) * 10
    w[k // 2 :] = w[: k // 2]
    x = torch.randn(b, k, generator=g)
    a = torch.randn(b // 2, k // 2, generator=g) * 1000
    x[: b // 2, : k // 2] += a
    x[: b // 2, k // 2 :] -= a
    return [x, w]


def triton_like(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """fp32: 512 lanes accumulated over 4 blocks of the reduction, then a tree sum."""
    acc = torch.zeros(x.shape[0], 512)
    for b in range(x.shape[1] // 512):
        acc += x[:, b * 512 : (b + 1) * 512] * w[b * 512 : (b + 1) * 512]
    while acc.shape[1] > 1:
        h = acc.shape[1] // 2
        acc = acc[:, :h] + acc[:, h:]
    return acc[:, 0]


def tf32(t: torch.Tensor) -> torch.Tensor:
    i = t.view(torch.int32)
    return ((i + 0x1000) & -8192).view(torch.float32)


def cancel_kernels(x, w, r64):
    honest = triton_like(x, w)
    out = {"honest (Triton-like order)": honest}
    for f in (3, 10, 30, 100):
        wrong = honest.clone()
        wrong[:16] = (r64[:16] + f * (honest[:16].double() - r64[:16])).float()
        out[f"{f}x its error on the cancelling rows"] = wrong
    t = honest.clone()
    t[:16] = triton_like(tf32(x[:16]), tf32(w))
    out["TF32 inputs on the cancelling rows"] = t
    return out


def gemm_kernels(x, weight, r64):
    col = (x @ weight.sum(0)) * 0.75
    parts = [x[:, i : i + 2048] @ weight[:, i : i + 2048].T for i in range(0, x.shape[1], 2048)]
    split = (((parts[0] + parts[1]) + (parts[2] + parts[3])) / 2).sum(1) * 1.5
    wrong = (r64[:, 0] + 10 * (split.double() - r64[:, 0])).float()
    # What a kernel rewarded for `ok` might try: tl.dot's default TF32 on the GEMM, the rest fp32.
    t32 = ((tf32(x) @ tf32(weight).T) / 2).sum(1) * 1.5
    return {
        "honest (W's columns summed first)": col[:, None],
        "honest (split-K 4, then the row sum)": split[:, None],
        "10x its error": wrong[:, None],
        "TF32 inputs to the GEMM": t32[:, None],
    }


def run(problem: str, seeds: int, tally: dict) -> None:
    for seed in range(seeds):
        if problem == "cancel":
            model = MatVec()
            inputs = cancel_inputs(seed)

            def make(seed=seed):
                return cancel_inputs(seed)
        else:
            g = torch.Generator().manual_seed(10_000 + seed)
            model = GemmSum(torch.randn(8192, 8192, generator=g))
            x = torch.rand(ROWS, 8192, generator=g)
            inputs = [x]

            def make(x=x):
                return [x.clone()]

        with torch.no_grad():
            expected = [model(*inputs)]
        r64 = fp64_outputs(model, inputs)
        with torch.no_grad():
            kernels = (
                cancel_kernels(*inputs, r64[0])
                if problem == "cancel"
                else gemm_kernels(inputs[0], model.weight.detach(), r64[0])
            )
        allowances: dict = {}
        for name, got in kernels.items():
            plain = compare_outputs([got], expected, TOL, trial=0)
            one = compare_outputs([got], expected, TOL, trial=0, reference64=r64)
            t = tally.setdefault((problem, name), [0, 0, 0, 0.0] + [0] * len(CONFIGS))
            err = float((got.double() - r64[0]).abs().mean())
            t[3] += err / max(float((expected[0].double() - r64[0]).abs().mean()), 1e-300)
            t[0] += 1
            t[1] += plain.kind == "ok"
            t[2] += one.kind == "ok"
            for c, (draws, factor) in enumerate(CONFIGS):
                if one.kind == "ok":
                    t[4 + c] += 1
                    continue
                if (draws, factor) not in allowances:
                    # factor 1 computed once per number of draws (the draws are seeded by their
                    # index, so fewer draws are the first of more), then scaled
                    if (draws, 1.0) not in allowances:
                        allowances[(draws, 1.0)] = fp32_error_allowance(
                            model, make, expected, r64, seed=seed, draws=draws, factor=1.0
                        )
                    allowances[(draws, factor)] = [a * factor for a in allowances[(draws, 1.0)]]
                more = compare_outputs(
                    [got],
                    expected,
                    TOL,
                    trial=0,
                    reference64=r64,
                    allowance64=allowances[(draws, factor)],
                )
                t[4 + c] += more.kind == "ok"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--gemm-seeds", type=int, default=8)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    t0 = time.perf_counter()
    tally: dict = {}
    run("cancel", args.seeds, tally)
    run("gemm_sum", args.gemm_seeds, tally)
    lines = [
        "# The fp64 rule with one draw of PyTorch's fp32 error, and with an allowance over "
        "several (CPU)",
        "",
        f"`python benchmarks/fp64_draws_calibration.py --seeds {args.seeds} "
        f"--gemm-seeds {args.gemm_seeds}`, torch {torch.__version__}, "
        f"{time.perf_counter() - t0:.0f} s. Share of runs with every element outside the "
        "tolerance (1e-4, 1e-4) accepted:",
        "",
        "| problem | kernel | mean error / PyTorch's | runs | tolerance alone | fp64 rule, "
        "1 draw | " + " | ".join(f"{f:g}x the largest of {1 + d} draws" for d, f in CONFIGS) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(CONFIGS),
    ]
    for (problem, name), (n, plain, one, ratio, *more) in tally.items():
        lines.append(
            f"| {problem} | {name} | {ratio / n:.2f} | {n} | {plain / n:.0%} | {one / n:.0%} | "
            + " | ".join(f"{m / n:.0%}" for m in more)
            + " |"
        )
    lines += [
        "",
        f"The judge uses the last: {ALLOWANCE_FACTOR:g}x PyTorch's largest error over "
        f"{1 + FP32_DRAWS} draws.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
