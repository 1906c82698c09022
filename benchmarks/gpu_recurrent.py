"""tools/kernels/recurrent_kernels.py on a GPU at KernelBench level 3's published sizes (36/37/38 LSTM,
40/41/42 GRU: batch 10, 512 steps, input 128, hidden 256, 6 layers): max abs error against an
fp64 reference, and time against nn.LSTM/GRU (cuDNN) and torch.compile of the same module
(which runs it eagerly: Dynamo cannot trace RNNs), for a few launch parameters.

    python benchmarks/gpu_recurrent.py OUT.json [--sweep]

Not run by the tests (needs CUDA).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.kernels.recurrent_kernels import RNN_CONFIG, triton_gru, triton_lstm  # noqa: E402

PROBLEMS = {
    "36_LSTMHn": ("lstm", False),
    "38_LSTMBidirectional": ("lstm", True),
    "40_GRUHidden": ("gru", False),
    "42_GRUBidirectionalHidden": ("gru", True),
}
SWEEP = [
    {"BLOCK_N": n, "BLOCK_K": k, "num_warps": w, "num_stages": st, "PIPELINE": pipe}
    for pipe in (True, False)
    for n, k, w, st in ((32, 32, 4, 3), (64, 32, 8, 3), (64, 64, 8, 3), (128, 32, 8, 3),
                        (128, 32, 8, 2), (256, 16, 8, 2), (128, 64, 8, 2), (64, 64, 4, 2))
]  # fmt: skip
"""Launch parameters tried with --sweep (PIPELINE only changes unidirectional stacks)."""


def build(kind: str, bidirectional: bool):
    torch.manual_seed(0)
    batch_first = kind == "lstm"  # as KernelBench: the LSTMs batch_first, the GRUs not
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    module = cls(128, 256, 6, batch_first=batch_first, bidirectional=bidirectional).cuda()
    dirs = 2 if bidirectional else 1
    x = torch.rand((10, 512, 128) if batch_first else (512, 10, 128), device="cuda")
    h0 = torch.rand(6 * dirs, 10, 256, device="cuda")
    c0 = torch.rand(6 * dirs, 10, 256, device="cuda")
    return module, x, h0, c0, batch_first


def run_triton(kind, module, x, h0, c0, batch_first, **config):
    weights = list(module._flat_weights)
    args = (6, module.bidirectional, batch_first, True)
    if kind == "lstm":
        return triton_lstm(x, h0, c0, weights, *args, **config)
    return (*triton_gru(x, h0, weights, *args, **config), None)


def reference64(kind, module, x, h0, c0):
    m64 = module.double()
    try:
        with torch.no_grad():
            if kind == "lstm":
                out, (h, c) = m64(x.double(), (h0.double(), c0.double()))
                return out, h, c
            out, h = m64(x.double(), h0.double())
            return out, h, None
    finally:
        module.float()


def errors(got, want) -> list[float]:
    return [(g.double() - w).abs().max().item() for g, w in zip(got, want) if w is not None]


def measure(name: str, sweep: bool) -> dict:
    kind, bidirectional = PROBLEMS[name]
    module, x, h0, c0, batch_first = build(kind, bidirectional)
    want = reference64(kind, module, x, h0, c0)
    record: dict = {}
    with torch.no_grad():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        cudnn_out = module(x, (h0, c0)) if kind == "lstm" else module(x, h0)
        flat = (cudnn_out[0], *cudnn_out[1]) if kind == "lstm" else cudnn_out
        record["cudnn_fp32_err"] = errors(flat, want)
        torch.backends.cudnn.allow_tf32 = True  # PyTorch's default, as the baselines time
        state = (h0, c0) if kind == "lstm" else h0
        record["eager_ms"] = triton.testing.do_bench(lambda: module(x, state), warmup=25, rep=100)
        record["triton"] = []
        for config in [{}] + (SWEEP if sweep else []):
            started = time.monotonic()

            def launch(config=config):
                return run_triton(kind, module, x, h0, c0, batch_first, **config)

            try:
                got = launch()
                torch.cuda.synchronize()
                err = errors(got, want)
                ms = triton.testing.do_bench(launch, warmup=25, rep=100)
            except Exception as exc:  # noqa: BLE001 - a config that does not compile
                record["triton"].append({"config": config, "error": str(exc)[:300]})
                continue
            row = {"config": {**RNN_CONFIG, **config}, "ms": ms, "max_err": err,
                   "wall_s": time.monotonic() - started}  # fmt: skip
            record["triton"].append(row)
            print(name, row, flush=True)
    record["best"] = min((r for r in record["triton"] if "ms" in r), key=lambda r: r["ms"])
    print(name, "eager", record["eager_ms"], "best", record["best"], flush=True)
    return record


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    args = parser.parse_args()
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "problems": {}}
    for name in args.problems.split(","):
        results["problems"][name] = measure(name, args.sweep)
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
