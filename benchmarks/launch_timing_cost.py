"""The cost of timing every recorded launch (issue 34 on a GPU: `tools.compile.launch_record.
record_launches(device="cuda")`, `note_launch_times`): a small Triton kernel launched N times in a
row, interleaved over R rounds, (a) bare, (b) under the launch recorder alone (what a GPU
verification did before), (c) under the recorder with the two events a launch, and their reading
after the synchronize. Prints one JSON line: host microseconds a launch (median over rounds) for
each, and what (c) adds to (b); the same kernel's event window for scale; and the cost of
`note_launch_times` alone a launch (`note_us_per_launch`, also on the CPU).

    python3 benchmarks/launch_timing_cost.py [--launches 2000] [--rounds 5]

On the CPU it only checks that it runs (no events there):
`TRITON_INTERPRET=1 python benchmarks/launch_timing_cost.py --device cpu --launches 20 --rounds 2`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402 - after the path
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tools.compile.launch_record import (  # noqa: E402
    LaunchRecord,
    launch_trace,
    note_launch_times,
    record_launches,
)


@triton.jit
def _add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


def note_cost_us(launches: int = 100, rounds: int = 50) -> float:
    """`note_launch_times` alone (the trace made by the worker anyway, events that answer at
    once): microseconds a launch, the median of `rounds` runs over `launches` GEMM-like
    records."""
    class Answered:
        def elapsed_time(self, end):
            return 0.5

    records = [
        LaunchRecord(
            name=f"k{i % 3}",
            file="candidate.py",
            first_line=3,
            grid=(32, 32),
            signature={"a": "*fp32", "b": "*fp32", "c": "*fp32", "M": "i32", "BM": "constexpr"},
            constexprs={"BM": 32},
            shapes={"a": [1024, 1024], "b": [1024, 1024], "c": [1024, 1024]},
            scalars={"M": 1024},
            events=(Answered(), Answered()),
        )
        for i in range(launches)
    ]
    trace = launch_trace(records)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        note_launch_times({}, 1, "first", records, trace)
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times) / launches * 1e6, 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    x = torch.zeros(4096, device=args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def launches(n: int) -> None:
        for _ in range(n):
            _add_one[(4,)](x, x.numel(), BLOCK=1024)

    def bare() -> float:
        t0 = time.perf_counter()
        launches(args.launches)
        sync()
        return time.perf_counter() - t0

    def recorded(device: str | None) -> float:
        t0 = time.perf_counter()
        with record_launches(device) as records:
            launches(args.launches)
        sync()
        note_launch_times({}, 1, "first", records, launch_trace(records))
        return time.perf_counter() - t0

    launches(10)  # compile, warm up
    sync()
    times: dict[str, list[float]] = {"bare": [], "recorder": [], "recorder_and_events": []}
    for _ in range(args.rounds):
        times["bare"].append(bare())
        times["recorder"].append(recorded(None))
        times["recorder_and_events"].append(recorded(args.device))
    us = {k: round(statistics.median(v) / args.launches * 1e6, 2) for k, v in times.items()}
    device_us = None
    with record_launches(args.device) as records:
        launches(50)
    sync()
    result: dict = {}
    note_launch_times(result, 1, "first", records, launch_trace(records))
    if result:
        ms = [launch[3] for launch in result["launch_times"][0]["launches"] if launch[3]]
        device_us = round(statistics.median(ms) * 1000, 2) if ms else None
    out = {
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu (interpreter)",
        "note_us_per_launch": note_cost_us(),
        "launches": args.launches,
        "rounds": args.rounds,
        "host_us_per_launch": us,
        "events_add_us_per_launch": round(us["recorder_and_events"] - us["recorder"], 2),
        "event_window_median_us": device_us,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
