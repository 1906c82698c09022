"""The fp64 rule's limits (issue 35, `tools/checks/fp64_rule.py`) measured on honest and dishonest
outputs, in-process, on the CPU or a GPU:

    python benchmarks/allowance_calibration.py [--device cpu|cuda] [--seeds 2] [--out FILE]

Problems: row sums of 3,072 rows over 4,096 signed terms where every row cancels by ~1000
("pairs"), rows cancelling 10 to 1000 times ("graded"), plain randn x100 ("randn"), and a
48x4096 @ 4096x64 GEMM of signed terms ("gemm"). Outputs: honest fp32 orders (the sums in 256 or
1,024 lanes; the GEMM in K-blocks of 32 and 512, and on a GPU a Triton tl.dot kernel with
input_precision="ieee"), the exact value rounded to fp32, the honest output rounded to 15
mantissa bits, and 3x PyTorch's own error at every element. Per output: the verdict of
`tools.checks.compare.compare_outputs` with the judge's draws, cap and claim; how many elements were
excused (E) against what PyTorch's own draws miss (P, the cap is P + 8); the worst element's
error over PyTorch's error there (the claim refuses above 8). On a GPU the reference is
cuBLAS/cuda's sum in full fp32 (TF32 off), the judge's setting.

Prints a markdown table and writes it to FILE (default $OUT/allowance_calibration.md where $OUT
is set, else benchmarks/results/allowance_calibration_<device>.md).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.checks.compare import Tolerance, compare_outputs  # noqa: E402
from tools.checks.fp64_rule import (  # noqa: E402
    ALLOWANCE_FACTOR,
    FP64_SLACK,
    ORDER_FACTOR,
    claim_ratio,
    excuse_cap,
)
from tools.checks.freshness import fp32_error_allowance  # noqa: E402
from tools.checks.precision import lower_precision, precision_sample  # noqa: E402

TOL = Tolerance()


class RowSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=-1)


class MatMul(torch.nn.Module):
    def forward(self, x, w):
        return x @ w


def _pairs(g, dev):
    a = torch.randn(3072, 2048, generator=g) * 1000
    return RowSum(), [(torch.cat([a, -a], 1) + torch.randn(3072, 4096, generator=g)).to(dev)]


def _graded(g, dev):
    s = 10 ** (1 + 2 * torch.rand(3072, 1, generator=g))
    a = torch.randn(3072, 2048, generator=g) * s
    return RowSum(), [(torch.cat([a, -a], 1) + torch.randn(3072, 4096, generator=g)).to(dev)]


def _randn(g, dev):
    return RowSum(), [(torch.randn(3072, 4096, generator=g) * 100).to(dev)]


def _gemm(g, dev):
    x = torch.randn(48, 4096, generator=g) * 10
    return MatMul(), [x.to(dev), (torch.randn(4096, 64, generator=g) * 10).to(dev)]


def _k32(g, dev, scale=1.0):
    """The corpus's matmul_k32 (67x32 @ 32x95), the device memos' problem."""
    a, b = torch.randn(67, 32, generator=g) * scale, torch.randn(32, 95, generator=g) * scale
    return MatMul(), [a.to(dev), b.to(dev)]


class GemmDivideSumScale(torch.nn.Module):
    """KernelBench level2/14's computation (x @ W.T / 2, summed over the hidden units, x 1.5),
    at a quarter of its published width on the CPU (8,192 on a GPU)."""

    def __init__(self, w):
        super().__init__()
        self.weight = torch.nn.Parameter(w, requires_grad=False)

    def forward(self, x):
        return ((x @ self.weight.T) / 2).sum(dim=1, keepdim=True) * 1.5


def _kb14(g, dev):
    n = 8192 if dev == "cuda" else 2048
    w = torch.randn(n, n, generator=g)
    return GemmDivideSumScale(w).to(dev), [torch.rand(1024, n, generator=g).to(dev)]


PROBLEMS = {
    "pairs": _pairs,
    "graded": _graded,
    "randn": _randn,
    "gemm": _gemm,
    "k32": _k32,
    "k32 x100": lambda g, dev: _k32(g, dev, 100.0),
    "kb14": _kb14,
}


def _lanes(x, lanes):
    acc = torch.zeros(x.shape[0], lanes, device=x.device)
    for c in range(0, x.shape[1], lanes):
        acc += x[:, c : c + lanes]
    return acc.sum(1)


def _sequential_sum(x):
    """One fp32 accumulator a row, the terms added in order (a Triton kernel with one lane)."""
    acc = torch.zeros(x.shape[0], device=x.device)
    for c in range(x.shape[1]):
        acc = acc + x[:, c]
    return acc


def _fma_chain(x, w):
    """A sequential fp32 FMA chain over K for every output element: what Triton's
    tl.dot(input_precision="ieee") computes on a GPU (each step fp64 then rounded: one rounding
    a step, as an FMA)."""
    acc = torch.zeros(x.shape[0], w.shape[1], device=x.device)
    xd, wd = x.double(), w.double()
    for k in range(x.shape[1]):
        acc = (acc.double() + xd[:, k : k + 1] * wd[k : k + 1]).float()
    return acc


def _rounded(x, mask):
    return (x.view(torch.int32) & mask).view(torch.float32)


def _split_products(x, w, hi_mask, lo_mask):
    """Three-product splits (tf32x3 with TF32 masks, bf16x3 with bf16 ones; truncation, as the
    projects' kernels do it), each product exact and summed in fp64, then rounded: the
    products' own error without an order's."""
    xh, wh = _rounded(x, hi_mask), _rounded(w, hi_mask)
    xl, wl = _rounded(x - xh, lo_mask), _rounded(w - wh, lo_mask)
    xh, wh, xl, wl = (t.double() for t in (xh, wh, xl, wl))
    return (xh @ wh + xh @ wl + xl @ wh).float()


TF32_MASK, BF16_MASK = -(1 << 13), -(1 << 16)


def _k_blocks(x, w, block):
    acc = torch.zeros(x.shape[0], w.shape[1], device=x.device)
    for k in range(0, x.shape[1], block):
        acc += x[:, k : k + block] @ w[k : k + block]
    return acc


try:  # the GPU's honest GEMM: a tl.dot kernel in full fp32
    import triton
    import triton.language as tl

    @triton.jit
    def _mm_ieee_kernel(
        a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
    ):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):  # K a multiple of BK here (4,096)
            rk = k0 + tl.arange(0, BK)
            a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
            acc += tl.dot(a, b, input_precision="ieee")
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=mask)

except ImportError:  # pragma: no cover - torch without triton
    triton = None


def _triton_ieee(x, w):
    """`_mm_ieee_kernel`'s product (GPU only; None elsewhere)."""
    if x.device.type != "cuda" or triton is None:
        return None
    c = torch.empty(x.shape[0], w.shape[1], device=x.device)
    grid = (triton.cdiv(x.shape[0], 32), triton.cdiv(w.shape[1], 32))
    _mm_ieee_kernel[grid](
        x.contiguous(), w.contiguous(), c, x.shape[0], w.shape[1], x.shape[1], BM=32, BN=32, BK=32
    )
    return c


def _round_15_bits(y):
    return ((y.view(torch.int32) + 0x80) & -256).view(torch.float32)


def outputs(model, inputs, ref32, ref64) -> dict:
    lower: dict = {}
    if isinstance(model, RowSum):
        honest = {
            "fp32 256 lanes": _lanes(inputs[0], 256),
            "fp32 1024 lanes": _lanes(inputs[0], 1024),
            "fp32 sequential": _sequential_sum(inputs[0]),
        }
    elif isinstance(model, GemmDivideSumScale):
        x, w = inputs[0], model.weight
        colsum = w.sum(0)
        honest = {
            "fp32 GEMM, then sum": ((x @ w.T) / 2).sum(1, keepdim=True) * 1.5,
            "colsum GEMV fp32": (x @ colsum)[:, None] / 2 * 1.5,
            "colsum GEMV fp64 acc.": ((x.double() @ w.double().sum(0)) / 2 * 1.5)[:, None].float(),
            "tf32x3 GEMM, then sum": (_split_products(x, w.T, TF32_MASK, TF32_MASK) / 2).sum(
                1, keepdim=True
            )
            * 1.5,
        }
    else:
        honest = {
            "fp32 K-blocks 32": _k_blocks(*inputs, 32),
            "fp32 K-blocks 512": _k_blocks(*inputs, 512),
            "fp32 FMA chain (sequential)": _fma_chain(*inputs),
            "tf32x3 products": _split_products(*inputs, TF32_MASK, TF32_MASK),
        }
        tri = _triton_ieee(*inputs)
        if tri is not None:
            honest["triton ieee dot"] = tri
        lower["bf16x3 products"] = _split_products(*inputs, BF16_MASK, BF16_MASK)
        lower["TF32 inputs"] = (
            _rounded(inputs[0], TF32_MASK).double() @ _rounded(inputs[1], TF32_MASK).double()
        ).float()
    first = next(iter(honest.values()))
    return {
        **honest,
        "exact, rounded to fp32 (fp64 accumulation)": ref64.float(),
        "15 mantissa bits": _round_15_bits(first),
        "3x PyTorch's error": (ref64 + 3 * (ref32.double() - ref64)).float(),
        **lower,
    }


def _judged(model, inputs, ref32, ref64, seed, order_factor):
    """The allowance and the cap as the judge makes them, with `ORDER_FACTOR` set (0: the rule
    before session 17, PyTorch's draws alone and a cap counted against PyTorch's reference)."""
    import tools.checks.fp64_rule as rule

    saved, rule.ORDER_FACTOR = rule.ORDER_FACTOR, order_factor
    try:
        made: dict = {}
        allowance = fp32_error_allowance(
            model, lambda: [t.clone() for t in inputs], [ref32], [ref64], seed=seed,
            record=made, tolerances=[TOL.for_dtype(torch.float32)],
        )  # fmt: skip
    finally:
        rule.ORDER_FACTOR = saved
    key = "outside" if order_factor else "outside_reference"
    return allowance, excuse_cap(made[key][0]), made


def _verdict(got, ref32, ref64, allowance, cap) -> tuple[str, int]:
    diff = compare_outputs(
        [got], [ref32], TOL, trial=0, reference64=[ref64], allowance64=allowance,
        excuse_caps=[cap],
    )  # fmt: skip
    uncapped = compare_outputs(
        [got], [ref32], TOL, trial=0, reference64=[ref64], allowance64=allowance,
        excuse_caps=None,
    )  # fmt: skip
    if diff.kind == "ok":
        return "ok", diff.accepted
    verdict = "refused (cap)" if "cap" in diff.message[:200] else "refused (claim or rule)"
    return verdict, uncapped.accepted


def _precision(got, ref32, ref64, allowance) -> str:
    samples = precision_sample([ref32], [ref64], torch.Generator().manual_seed(0))
    found = lower_precision([got], samples, allowance64=allowance)
    return "refused" if found else "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = [
        "| problem | seed | output | verdict | before | precision check | E excused | "
        "P ref / truth | worst err / scale | / D | / C |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.problems.split(","):
        for seed in range(args.seeds):
            model, inputs = PROBLEMS[name](torch.Generator().manual_seed(seed), args.device)
            with torch.no_grad():
                ref32 = model(*inputs)
                ref64 = copy.deepcopy(model).double()(*[t.double() for t in inputs])
            allowance, cap, made = _judged(model, inputs, ref32, ref64, seed, ORDER_FACTOR)
            old_allowance, old_cap, _ = _judged(model, inputs, ref32, ref64, seed, 0.0)
            d = old_allowance[0].double() / ALLOWANCE_FACTOR
            c = made["conditioning"][0].double()
            with torch.no_grad():
                candidates = outputs(model, inputs, ref32, ref64)
            for label, got in candidates.items():
                verdict, excused = _verdict(got, ref32, ref64, allowance, cap)
                before, _ = _verdict(got, ref32, ref64, old_allowance, old_cap)
                _, _, ratio = claim_ratio(got, ref32, ref64, allowance[0])
                err = (got.double() - ref64).abs()
                floor = ref64.abs().mul(FP64_SLACK).clamp_min(torch.finfo(torch.float32).tiny)
                per_d = float((err / torch.fmax(d, floor)).max())
                per_c = float((err / torch.fmax(c, floor)).max())
                rows.append(
                    f"| {name} | {seed} | {label} | {verdict} | {before} | "
                    f"{_precision(got, ref32, ref64, allowance)} | {excused} | "
                    f"{made['outside_reference'][0]} / {made['outside_truth'][0]} | "
                    f"{float(ratio.max()):.2f} | {per_d:.1f} | {per_c:.1f} |"
                )
                print(rows[-1], flush=True)
    text = f"device: {args.device} ({torch.cuda.get_device_name() if args.device == 'cuda' else 'CPU'})\n\n"
    text += "\n".join(rows) + "\n"
    out = args.out
    if out is None:
        base = os.environ.get("OUT")
        out = (
            f"{base}/allowance_calibration.md"
            if base
            else str(Path(__file__).parent / "results" / f"allowance_calibration_{args.device}.md")
        )
    Path(out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
