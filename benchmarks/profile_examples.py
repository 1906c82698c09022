"""Profile every example kernel on the GPU; measure how repeatable one measurement is.

    python benchmarks/profile_examples.py            # needs a CUDA GPU

1. examples/problems/X.py with examples/kernels/X.py (and relu_inductor_style.py): eager,
   torch.compile and candidate medians, both speedups, roofline fraction.
2. Larger size variants (Problem.with_sizes), so one forward runs well over 50 us; the ReLU one
   is profiled five times, each a fresh verify + timing job, and the spread of the five candidate
   medians is reported (goal: under 2%).

Prints a Markdown table (last on stdout) and writes the full JSON and the table to $OUT when
set, else to benchmarks/results/. Uses tools/ only (no agent/, no rich): it runs on a bare GPU box.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _examples import EX, example_kernels, problem_for  # noqa: E402

from tools.checks.roofline import format_ms  # noqa: E402
from tools.core.problem import read_kernel, read_problem  # noqa: E402
from tools.orchestrate.profile import ProfileOptions, ProfileResult, profile  # noqa: E402
from tools.orchestrate.verify import Verifier, VerifyOptions  # noqa: E402

LARGE = [
    ("relu", {"BATCH": 8192, "DIM": 8192}, "relu.py", 5),  # 256 MiB in, 256 MiB out
    ("softmax", {"BATCH": 131072, "DIM": 333}, "softmax.py", 1),  # 166 MiB in, 166 MiB out
]
if os.environ.get("PROFILE_LARGE") == "relu":
    LARGE = LARGE[:1]
DEADLINE_S = float(os.environ.get("PROFILE_DEADLINE_S", "400"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pairs() -> list[tuple[str, Path, Path]]:
    """Example pairs; PROFILE_ONLY=relu,softmax restricts them (the repeatability runs go first)."""
    only = [x for x in os.environ.get("PROFILE_ONLY", "").split(",") if x]
    out = []
    for kernel in example_kernels(("kernels",)):
        if only and kernel.stem not in only:
            continue
        out.append((kernel.stem, problem_for(kernel), kernel))
    return out


def row(label: str, r: ProfileResult) -> str:
    def ms(s) -> str:
        return format_ms(s.median_ms) if s is not None else "-"

    def sp(s) -> str:
        return f"{s.value:.2f}x" if s is not None else "-"

    roof = f"{r.roofline.fraction:.0%} ({r.roofline.bound})" if r.roofline else "-"
    top = r.kernels[0].name if r.kernels else "-"
    return (
        f"| {label} | {r.status} | {ms(r.eager)} | {ms(r.compiled)} | {ms(r.candidate)} | "
        f"{sp(r.speedup_eager)} | {sp(r.speedup_compile)} | {roof} | {top} |"
    )


HEADER = (
    "| example | status | eager | torch.compile | candidate | vs eager | vs compile | roofline | top kernel |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        log("no CUDA GPU: nothing to profile (interpreter timings are not speed)")
        return 1
    start = time.monotonic()
    verifier = Verifier(VerifyOptions(device="cuda", trials=3))
    report: dict = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "examples": [],
        "large": [],
        "repeatability": {},
    }
    rows, large_rows = [], []
    for name, sizes, kernel_name, repeats in LARGE:
        prob = read_problem(EX / "problems" / f"{name}.py").with_sizes(**sizes)
        kernel = EX / "kernels" / kernel_name
        label = f"{name} {'x'.join(str(v) for v in sizes.values())}"
        medians = []
        for i in range(repeats):
            if time.monotonic() - start > DEADLINE_S:
                log(f"deadline: skipping {label} run {i + 1}")
                break
            log(f"profiling {label} (run {i + 1}/{repeats}) ...")
            r = profile(
                prob,
                read_kernel(kernel),
                verifier=verifier,
                kernel_path=str(kernel.relative_to(ROOT)),
                options=ProfileOptions(timeout_s=400),
            )
            log(f"  {r.status} in {r.duration_s:.1f} s")
            report["large"].append(
                {"example": label, "run": i + 1, "feedback": r.feedback(), **r.to_dict()}
            )
            if r.candidate is not None:
                medians.append(r.candidate.median_ms)
            if i == 0:
                large_rows.append(row(label, r))
        if len(medians) >= 2:
            m = statistics.median(medians)
            report["repeatability"][label] = {
                "candidate_medians_ms": medians,
                "range_over_median": (max(medians) - min(medians)) / m,
                "std_over_mean": statistics.pstdev(medians) / statistics.fmean(medians),
            }
    for label, prob_path, kernel in pairs():
        if time.monotonic() - start > DEADLINE_S:
            log(f"deadline: skipping {label}")
            continue
        log(f"profiling {label} ...")
        r = profile(
            read_problem(prob_path),
            read_kernel(kernel),
            verifier=verifier,
            kernel_path=str(kernel.relative_to(ROOT)),
        )
        log(f"  {r.status} in {r.duration_s:.1f} s")
        report["examples"].append({"example": label, "feedback": r.feedback(), **r.to_dict()})
        rows.append(row(label, r))
    lines = [
        f"Device: {report['device']}, torch {report['torch']}",
        "",
        HEADER,
        *rows,
        *large_rows,
        "",
    ]
    for label, rep in report["repeatability"].items():
        ms = ", ".join(f"{x * 1e3:.1f}" for x in rep["candidate_medians_ms"])
        lines.append(
            f"Repeatability, {label}: {len(rep['candidate_medians_ms'])} independent profiles, "
            f"candidate medians {ms} us; range/median {rep['range_over_median']:.2%}, "
            f"std/mean {rep['std_over_mean']:.2%} (goal < 2%)"
        )
    first = (
        report["large"][0]
        if report["large"]
        else (report["examples"][0] if report["examples"] else None)
    )
    if first and first.get("peaks"):
        p = first["peaks"]
        lines.append(
            f"Measured peaks: copy {p['bandwidth'] / 1e12:.2f} TB/s; "
            + ", ".join(f"{k} {v / 1e12:.0f} TFLOP/s" for k, v in p["flops"].items())
        )
    lines.append(f"Total wall time {time.monotonic() - start:.0f} s")
    table = "\n".join(lines)
    out = Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    # paths relative to the repository: the report names no directory of the machine it ran on
    text = json.dumps(report, indent=1, default=str).replace(str(ROOT) + os.sep, "")
    (out / "profile_h200.json").write_text(text)
    (out / "profile_h200.md").write_text(table + "\n")
    for r in report["examples"]:
        log(f"--- {r['example']}: " + r["message"])
    for r in report["examples"][-1:] + report["large"][:1]:
        print(f"--- feedback, {r['example']}:\n{r['feedback']}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
