"""The fp64 rule's limits (issue 35, `tools/fp64_rule.py`) measured on honest and dishonest
outputs, in-process, on the CPU or a GPU:

    python benchmarks/allowance_calibration.py [--device cpu|cuda] [--seeds 2] [--out FILE]

Problems: row sums of 3,072 rows over 4,096 signed terms where every row cancels by ~1000
("pairs"), rows cancelling 10 to 1000 times ("graded"), plain randn x100 ("randn"), and a
48x4096 @ 4096x64 GEMM of signed terms ("gemm"). Outputs: honest fp32 orders (the sums in 256 or
1,024 lanes; the GEMM in K-blocks of 32 and 512, and on a GPU a Triton tl.dot kernel with
input_precision="ieee"), the exact value rounded to fp32, the honest output rounded to 15
mantissa bits, and 3x PyTorch's own error at every element. Per output: the verdict of
`tools.compare.compare_outputs` with the judge's draws, cap and claim; how many elements were
excused (E) against what PyTorch's own draws miss (P, the cap is P + 8); the worst element's
error over PyTorch's error there (the claim refuses above 8). On a GPU the reference is
cuBLAS/cuda's sum in full fp32 (TF32 off), the judge's setting.

Prints a markdown table and writes it to FILE (default $OUT/allowance_calibration.md where $OUT
is set, else benchmarks/results/allowance_calibration_<device>.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.compare import Tolerance, compare_outputs  # noqa: E402
from tools.fp64_rule import claim_ratio, excuse_cap  # noqa: E402
from tools.freshness import fp32_error_allowance  # noqa: E402

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


PROBLEMS = {"pairs": _pairs, "graded": _graded, "randn": _randn, "gemm": _gemm}


def _lanes(x, lanes):
    acc = torch.zeros(x.shape[0], lanes, device=x.device)
    for c in range(0, x.shape[1], lanes):
        acc += x[:, c : c + lanes]
    return acc.sum(1)


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
    if isinstance(model, RowSum):
        honest = {
            "fp32 256 lanes": _lanes(inputs[0], 256),
            "fp32 1024 lanes": _lanes(inputs[0], 1024),
        }
    else:
        honest = {
            "fp32 K-blocks 32": _k_blocks(*inputs, 32),
            "fp32 K-blocks 512": _k_blocks(*inputs, 512),
        }
        tri = _triton_ieee(*inputs)
        if tri is not None:
            honest["triton ieee dot"] = tri
    first = next(iter(honest.values()))
    return {
        **honest,
        "exact, rounded to fp32": ref64.float(),
        "15 mantissa bits": _round_15_bits(first),
        "3x PyTorch's error": (ref64 + 3 * (ref32.double() - ref64)).float(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = [
        "| problem | seed | output | verdict | E excused | P (cap - 8) | worst err / PyTorch's |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, make in PROBLEMS.items():
        for seed in range(args.seeds):
            model, inputs = make(torch.Generator().manual_seed(seed), args.device)
            with torch.no_grad():
                ref32 = model(*inputs)
                ref64 = model(*[t.double() for t in inputs])
            made: dict = {}
            allowance = fp32_error_allowance(
                model, lambda inputs=inputs: [t.clone() for t in inputs], [ref32], [ref64],
                seed=seed, record=made, tolerances=[TOL.for_dtype(torch.float32)],
            )  # fmt: skip
            cap = excuse_cap(made["outside"][0])
            for label, got in outputs(model, inputs, ref32, ref64).items():
                diff = compare_outputs(
                    [got], [ref32], TOL, trial=0, reference64=[ref64], allowance64=allowance,
                    excuse_caps=[cap],
                )  # fmt: skip
                uncapped = compare_outputs(
                    [got], [ref32], TOL, trial=0, reference64=[ref64], allowance64=allowance,
                    excuse_caps=None,
                )  # fmt: skip
                _, _, ratio = claim_ratio(got, ref32, ref64, allowance[0])
                verdict = diff.kind if diff.kind == "ok" else "refused"
                if diff.kind != "ok":
                    verdict += " (cap)" if "cap" in diff.message[:200] else " (claim or rule)"
                excused = diff.accepted if diff.kind == "ok" else uncapped.accepted
                rows.append(
                    f"| {name} | {seed} | {label} | {verdict} | {excused} | {cap - 8} | "
                    f"{float(ratio.max()):.2f} |"
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
