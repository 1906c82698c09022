"""The precision sample's cost at KernelBench's output sizes (session 16's memory/time
regression): `tools.checks.precision.precision_sample` on outputs of level1/20_LeakyReLU (4096 x 393216),
level1/82 (16 x 64 x 510 x 510) and level1/35_GroupNorm_ (112 x 64 x 512 x 512), each a broadcast
value (no memory of its own), so that the time and the peak host memory shown are the sample's
alone; and, for scale, a permutation of 2^26 elements (what the sample drew before 92b77b2:
`torch.randperm` of the whole output, 8 bytes and ~0.3 us an element on a loaded 2-core CPU).

    python benchmarks/memreg_sample_cost.py [--device cuda] [--out DIR]

Seconds on one H200 (or the CPU); writes DIR/memreg_sample_cost.json (DIR: $OUT, else
benchmarks/results)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tools.checks.precision import precision_sample  # noqa: E402

SHAPES = {
    "level1/20_LeakyReLU": (4096, 393216),
    "level1/82_conv_depthwise_2D_square_input_square_kernel": (16, 64, 510, 510),
    "level1/35_GroupNorm_": (112, 64, 512, 512),
}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks/results"))
    args = ap.parse_args()
    rows = []
    for name, shape in SHAPES.items():
        expected = torch.ones(1, device=args.device).expand(*shape)
        reference64 = torch.ones(1, dtype=torch.float64, device=args.device).expand(*shape)
        before = _peak_mb()
        t0 = time.perf_counter()
        (s,) = precision_sample([expected], [reference64], torch.Generator().manual_seed(1))
        if args.device == "cuda":
            torch.cuda.synchronize()
        rows.append(
            {
                "problem": name,
                "elements": expected.numel(),
                "sample_s": round(time.perf_counter() - t0, 3),
                "host_peak_grew_mb": round(_peak_mb() - before, 1),
                "sampled": s.index.numel(),
            }
        )
        print(rows[-1], flush=True)
    t0 = time.perf_counter()
    torch.randperm(1 << 26, generator=torch.Generator().manual_seed(1))
    permutation_s = time.perf_counter() - t0
    result = {
        "device": args.device,
        "samples": rows,
        "randperm_2p26_s": round(permutation_s, 3),
        "randperm_us_per_element": round(permutation_s / 2**26 * 1e6, 4),
    }
    print(result, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memreg_sample_cost.json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
