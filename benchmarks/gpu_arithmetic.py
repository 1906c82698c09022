"""Verdict.arithmetic on a GPU (issue 35): each candidate verified as `tools.orchestrate.profile` verifies
it (the candidate job's Triton cache kept), then named three ways: the verdict's field (the
compiled TTIR where the cache has it), the cache alone per kernel, and the source alone (what a
verification without a kept cache says). Figures to $OUT/gpu_arithmetic.{json,md}.

    python benchmarks/gpu_arithmetic.py                  # one H200: about two minutes
    python benchmarks/gpu_arithmetic.py --device cpu     # the same path on the interpreter

Candidates: the example matmul (ieee: fp32), the same with its precision hidden behind an
environment variable (tf32x3: the source cannot tell, the compiled kernel can) and with tl.dot's
default (TF32: outside the fp32 contract), and this project's convolution in tf32x3 and in
bf16x3 on operands split in memory (X_SPLIT). `expected` is what each should read on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.checks.arithmetic import arithmetic_of, from_cache_dir  # noqa: E402
from tools.core.problem import read_problem  # noqa: E402
from tools.core.results import Verdict  # noqa: E402
from tools.kernels.triton_conv import candidate_source  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

CONV_PROBLEM = '''"""A 3x3 convolution, 32 -> 64 channels (small, so the interpreter can run it too)."""
import torch
import torch.nn as nn

batch_size = {batch}
in_channels = 32
out_channels = 64
size = {size}


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
'''

CONV_CANDIDATE = """import torch
import torch.nn as nn

{library}


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return triton_convolution(
            x, self.conv.weight, self.conv.bias, (1, 1), (1, 1), (1, 1), False, (0, 0), 1,
            {knobs}
        )
"""


def matmul_variants() -> dict[str, str]:
    src = (EX / "kernels" / "matmul.py").read_text()
    dot = 'acc += tl.dot(a, b, input_precision="ieee")'
    hidden = "import os\n" + src.replace(
        "    BLOCK_K: tl.constexpr,\n", "    BLOCK_K: tl.constexpr,\n    PRECISION: tl.constexpr,\n"
    ).replace(dot, "acc += tl.dot(a, b, input_precision=PRECISION)").replace(
        "        BLOCK_K=BLOCK_K,\n",
        '        BLOCK_K=BLOCK_K,\n        PRECISION=os.environ.get("UNSET_PRECISION", "tf32x3"),\n',
    )
    return {
        "matmul_ieee": src,
        "matmul_hidden_tf32x3": hidden,
        "matmul_default_tf32": src.replace(dot, "acc += tl.dot(a, b)"),
    }


CASES = [
    # name, problem, expected on a GPU
    ("matmul_ieee", "matmul", ["fp32"]),
    ("matmul_hidden_tf32x3", "matmul", ["tf32x3"]),
    ("matmul_default_tf32", "matmul", ["tf32"]),
    ("conv_tf32x3", "conv", ["fp32", "tf32x3"]),
    ("conv_bf16x3_split", "conv", ["fp32", "bf16x3"]),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu-out"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-arith-"))
    cpu = args.device == "cpu"
    conv_problem = work / "conv.py"
    conv_problem.write_text(CONV_PROBLEM.format(batch=2 if cpu else 16, size=8 if cpu else 64))
    problems = {"matmul": read_problem(EX / "problems" / "matmul.py"),
                "conv": read_problem(conv_problem)}  # fmt: skip
    library = candidate_source()
    sources = {
        **matmul_variants(),
        "conv_tf32x3": CONV_CANDIDATE.format(library=library, knobs='precision="tf32x3"'),
        "conv_bf16x3_split": CONV_CANDIDATE.format(
            library=library, knobs='precision="bf16x3", X_SPLIT=True'
        ),
    }
    verifier = Verifier(VerifyOptions(trials=2, timeout_s=300, device=args.device))
    rows = []
    for name, problem, expected in CASES:
        cache = work / f"cache-{name}"
        start = time.monotonic()
        verdict = verifier.verify(
            problems[problem], sources[name], f"{name}.py", triton_cache_out=str(cache)
        )
        bare = Verdict.from_dict(verdict.to_dict())
        rows.append({
            "candidate": name,
            "status": verdict.status,
            "expected_on_gpu": expected,
            "arithmetic": verdict.arithmetic,
            "from_cache": {k: v.names() for k, v in from_cache_dir(str(cache)).items()},
            "from_source": arithmetic_of(sources[name], bare),
            "kernels": verdict.evidence.audit.kernels if verdict.evidence.audit else [],
            "seconds": round(time.monotonic() - start, 1),
        })  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    (out / "gpu_arithmetic.json").write_text(json.dumps({"device": args.device, "rows": rows}))
    lines = [
        f"# Verdict.arithmetic on {args.device}",
        "",
        "| candidate | status | verdict's arithmetic | expected on a GPU | source alone | per kernel (cache) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        per = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["from_cache"].items()) or "-"
        lines.append(
            f"| {r['candidate']} | {r['status']} | {', '.join(r['arithmetic'])} | "
            f"{', '.join(r['expected_on_gpu'])} | {', '.join(r['from_source'])} | {per} |"
        )
    (out / "gpu_arithmetic.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
