"""Issue 35 on a GPU: a 3x3 convolution, verified as this project's Triton convolution in
tf32x3 (the default) and in bf16x3 (what 77 of 156 kernels of the merged H200 table used),
without the scale trials (`input_scales=()`, the default before) and with them (the default
now), at a 64 MiB output (the scale trial runs) and at a 512 MiB one (over the fp64 rule's
limit: no scale trial; the precision sample from rows of the batch where needed). Shows what
decides each verdict and what it costs.

    python benchmarks/gpu_scales_check.py [--device cuda] [--small] [--out DIR]

On one H200 it takes a few minutes; `--small` (sizes the CPU interpreter can run) checks the
script itself. Writes DIR/gpu_scales_check.json and .md (DIR: $OUT, else benchmarks/results).
Uses only `tools/`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.core.problem import read_problem  # noqa: E402
from tools.kernels.triton_conv import candidate_source  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402

PROBLEM = """
import torch
import torch.nn as nn

BATCH, C_IN, C_OUT, SIZE = {sizes}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C_IN, C_OUT, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, SIZE, SIZE)]


def get_init_inputs():
    return []
"""

KERNEL = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d({c_in}, {c_out}, 3, padding=1)

    def forward(self, x):
        return triton_convolution(
            x, self.conv.weight, self.conv.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
            precision={precision!r},
        )
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    # 64 input channels (576 products an output). 8 x 128 x 128 x 128 fp32: a 64 MiB output,
    # under the fp64 rule's limit (the scale trial runs); 16 x 128 x 256 x 256: 512 MiB, over it
    # (no scale trial; the precision sample from rows of the batch where the whole fp64 run has
    # no room or time)
    all_sizes = [(2, 16, 20, 9)] if args.small else [(8, 64, 128, 128), (16, 64, 128, 256)]
    rows = []
    base = {"trials": args.trials, "device": args.device, "timeout_s": 600}
    without = Verifier(VerifyOptions(**base, input_scales=()))
    now = Verifier(VerifyOptions(**base), sandbox=without.sandbox)
    for sizes in all_sizes:
        _check(sizes, without, now, rows)
    _write(Path(args.out), rows, args)
    return 0


def _check(sizes: tuple, without: Verifier, now: Verifier, rows: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conv3x3.py"
        path.write_text(PROBLEM.format(sizes=sizes))
        problem = read_problem(str(path))
        for precision in ("tf32x3", "bf16x3"):
            source = (
                "import torch\nimport torch.nn as nn\n\n"
                + candidate_source()
                + KERNEL.format(c_in=sizes[1], c_out=sizes[2], precision=precision)
            )
            for label, verifier in (("without scale trials", without), ("with", now)):
                t0 = time.perf_counter()
                v = verifier.verify(problem, source, f"conv_{precision}.py")
                rows.append(
                    {
                        "sizes": list(sizes),
                        "precision": precision,
                        "protocol": label,
                        "status": v.status,
                        "seconds": round(time.perf_counter() - t0, 1),
                        "message": v.message[:600],
                        "notes": v.evidence.notes,
                    }
                )
                print(json.dumps(rows[-1])[:400], flush=True)


def _write(out: Path, rows: list, args: argparse.Namespace) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_scales_check.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "# Issue 35 on the device: a 3x3 convolution in tf32x3 and bf16x3",
        "",
        f"`python benchmarks/gpu_scales_check.py --device {args.device}"
        f"{' --small' if args.small else ''}`, {args.trials} trials; sizes are (batch, c_in, "
        "c_out, size); notes say where a scale trial was left out or a trial not checked.",
        "",
        "| sizes | precision | protocol | status | s | message | notes |",
        "|---|---|---|---|---:|---|---|",
    ]
    for r in rows:
        msg = r["message"][:200].replace("|", "/").replace("\n", " ")
        notes = "; ".join(n[:160] for n in r["notes"] if "isolation" not in n).replace("|", "/")
        lines.append(
            f"| {r['sizes']} | {r['precision']} | {r['protocol']} | {r['status']} | "
            f"{r['seconds']} | {msg} | {notes} |"
        )
    (out / "gpu_scales_check.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
