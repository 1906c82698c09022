"""What an input offset (+3, issue 35) would catch that the verifier's scale trial (x100) does
not, on the CPU, in process (no verifier, no Triton): kernels emulated in PyTorch fp32 and
compared with PyTorch's own fp32 result at the default tolerance (atol = rtol = 1e-4), on
randn inputs as drawn, scaled (x100) and shifted (+3, +100).

    python benchmarks/offset_trial_probe.py [--rows 64] [--cols 4096]

Kernels: a LayerNorm with two-pass statistics (honest), one with one-pass statistics
(E[x^2] - E[x]^2 in fp32: exact in exact arithmetic, loses digits as the mean grows against
the spread), a softmax without its max subtraction (overflows on large inputs), and a bf16x3
row sum (operands split into three bf16 products, as the convolutions' picks do). A scale keeps
the mean/spread ratio; only an offset moves it.
"""

from __future__ import annotations

import argparse

import torch


def two_pass_ln(x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def one_pass_ln(x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean * mean
    return (x - mean) / torch.sqrt(var.clamp_min(0) + 1e-5)


def softmax_no_max(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(-1, keepdim=True)


def bf16x3_rowsum(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    def split(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hi = t.to(torch.bfloat16).float()
        return hi, (t - hi).to(torch.bfloat16).float()

    xh, xl = split(x)
    wh, wl = split(w)
    return (xh * wh + xh * wl + xl * wh).sum(-1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--cols", type=int, default=4096)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(args.rows, args.cols, generator=g)
    w = torch.randn(args.cols, generator=g)
    inputs = {"x1": x0, "x100": x0 * 100, "+3": x0 + 3, "+100": x0 + 100}
    refs = {
        "layer_norm two-pass (honest)": (
            lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]),
            two_pass_ln,
        ),
        "layer_norm one-pass E[x^2]-E[x]^2": (
            lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]),
            one_pass_ln,
        ),
        "softmax without max subtraction": (lambda x: torch.softmax(x, -1), softmax_no_max),
        "bf16x3 row dot": (lambda x: (x * w).sum(-1), lambda x: bf16x3_rowsum(x, w)),
    }
    print("| kernel | " + " | ".join(inputs) + " |")
    print("|---|" + "---|" * len(inputs))
    for name, (ref, kernel) in refs.items():
        cells = []
        for x in inputs.values():
            e, got = ref(x), kernel(x)
            bad = ~((got - e).abs() <= 1e-4 + 1e-4 * e.abs())  # NaN counts as outside
            cells.append(f"{100 * bad.float().mean().item():.2f}%")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
