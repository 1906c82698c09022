"""KernelBench's own judge against this project's verdicts, kernel by kernel (issue 36).

For every generation of one or more exported runs (`agent bench --export-kernelbench RUN_DIR`:
`level_<L>_problem_<id>_sample_<s>_kernel.py` beside our `triton_agent_eval_results.json`), runs
KernelBench's judge, `kb_judge.py PROBLEM KERNEL` (../shared/kernelbench-eval: its static checker
and, on a GPU, its `eval_kernel_against_ref`: 5 seeded trials at its fp32 1e-4), in a process of
its own, and sets its answer beside ours and beside the export's prediction
(`agent.kernelbench_accept`: would it accept, and why not):

    python benchmarks/kb_judge_agreement.py --problems .kb/kb --level 1 \\
        --run exact=/tmp/runs/exact --run pytorch-default=/tmp/runs/default [--out DIR]
        [--judge ../shared/kernelbench-eval/kb_judge.py] [--precision fp32] [--perf-trials 10]
        [--timeout 300] [--static-only]

Writes `kb_agreement.json` and `kb_agreement.md` under --out (default $OUT, else the current
folder) and prints the markdown. KernelBench accepts a kernel when its static checker finds it
valid and its trials pass (`--static-only`, on a CPU: the checker alone). A kernel whose source
and problem were already judged (the same draft exported under both settings) is judged once.
Exit 0 when every kernel got an answer from the judge, 1 otherwise (agreement is reported, not
required), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.kernelbench_io import RESULTS_NAME, level_problems  # noqa: E402

DEFAULT_JUDGE = ROOT.parent / "shared" / "kernelbench-eval" / "kb_judge.py"
KERNEL = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


# ---------------------------------------------------------------------------------------------
# Running the judge


def run_judge(
    judge: Path,
    problem: Path,
    kernel: Path,
    *,
    precision: str,
    timeout: float,
    static_only: bool,
    perf_trials: int | None = None,
) -> dict[str, Any]:
    """KernelBench's judge on one pair, in a process of its own: its JSON line, or
    `{"error": ...}` when it printed none (crashed, timed out)."""
    cmd = [sys.executable, str(judge), str(problem), str(kernel), "--precision", precision]
    if static_only:
        cmd.append("--static-only")
    if perf_trials is not None:
        cmd += ["--perf-trials", str(perf_trials)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"KernelBench's judge ran past {timeout:g} s"}
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {
        "error": f"no JSON from KernelBench's judge (exit {done.returncode}): {' | '.join(tail)}"
    }


def kb_accepts(judged: dict[str, Any], static_only: bool) -> bool | None:
    """KernelBench's answer: valid under its static checker and correct on its trials; None
    where it gave none (an error, or the static check alone said valid)."""
    if "error" in judged or "static_valid" not in judged:
        return None
    if not judged["static_valid"]:
        return False
    if static_only:
        return None
    if "correct" not in judged:
        return None
    return bool(judged.get("compiled")) and bool(judged["correct"])


# ---------------------------------------------------------------------------------------------
# Agreement (pure)


def ours_for(results: dict[str, Any], pid: int, sample: int) -> dict[str, Any]:
    """Our entry for one generation in `triton_agent_eval_results.json` ({} where missing)."""
    for entry in results.get(str(pid)) or []:
        if entry.get("sample_id") == sample:
            return entry
    return {}


def agreement_row(
    setting: str,
    kernel: str,
    ours: dict[str, Any],
    judged: dict[str, Any],
    *,
    static_only: bool,
) -> dict[str, Any]:
    """One kernel: our verdict, the export's prediction, KernelBench's answer, and whether they
    agree (`agree`: our `correct` against KernelBench's acceptance; `predicted_right`: the
    export's yes/no against it; None where either side gave no answer)."""
    meta = ours.get("metadata") or {}
    prediction = meta.get("triton_agent_kernelbench_judge") or {}
    accepted = kb_accepts(judged, static_only)
    correct = ours.get("correctness")
    would = prediction.get("would_accept")
    kb_meta = judged.get("metadata") or {}
    return {
        "setting": setting,
        "kernel": kernel,
        "ours_status": meta.get("triton_agent_status"),
        "ours_correct": correct,
        "predicted": would,
        "predicted_why_not": prediction.get("why_not") or [],
        "measured_error": (prediction.get("correctness") or {}).get("measured"),
        "kb_static_valid": judged.get("static_valid"),
        "kb_static_errors": judged.get("static_errors") or [],
        "kb_correct": judged.get("correct"),
        "kb_accepts": accepted,
        "kb_max_difference": kb_meta.get("max_difference"),
        "kb_trials": kb_meta.get("correctness_trials"),
        "kb_error": judged.get("error"),
        "kb_speedup_vs_eager": judged.get("speedup_vs_eager"),
        "agree": None if accepted is None or correct is None else bool(correct) == accepted,
        "predicted_right": (
            None if accepted is None or would not in ("yes", "no") else (would == "yes") == accepted
        ),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per setting: kernels, KernelBench's answers, agreement with our verdicts (all kernels and
    those we call correct) and with the export's predictions."""
    out: dict[str, Any] = {}
    for setting in dict.fromkeys(r["setting"] for r in rows):
        mine = [r for r in rows if r["setting"] == setting]
        answered = [r for r in mine if r["agree"] is not None]
        ours_ok = [r for r in answered if r["ours_correct"]]
        predicted = [r for r in mine if r["predicted_right"] is not None]
        out[setting] = {
            "kernels": len(mine),
            "kb_answered": len([r for r in mine if r["kb_accepts"] is not None]),
            "kb_accepts": len([r for r in mine if r["kb_accepts"]]),
            "agree": len([r for r in answered if r["agree"]]),
            "compared": len(answered),
            "ours_correct": len(ours_ok),
            "ours_correct_kb_accepts": len([r for r in ours_ok if r["kb_accepts"]]),
            "predicted": len(predicted),
            "predicted_right": len([r for r in predicted if r["predicted_right"]]),
            "predicted_unknown": len([r for r in mine if r["predicted"] == "unknown"]),
        }
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "; ".join(str(v) for v in value).replace("|", "/") or "-"
    return str(value).replace("|", "/")


def render_markdown(summary: dict[str, Any], rows: list[dict[str, Any]], command: str) -> str:
    lines = ["# KernelBench's judge against our verdicts", "", f"`{command}`", ""]
    lines += [
        "| setting | kernels | KB answered | KB accepts | agree / compared | ours correct: KB "
        "accepts | export predicted right / predicted (unknown) |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting, s in summary.items():
        lines.append(
            f"| {setting} | {s['kernels']} | {s['kb_answered']} | {s['kb_accepts']} "
            f"| {s['agree']} / {s['compared']} | {s['ours_correct_kb_accepts']} / "
            f"{s['ours_correct']} | {s['predicted_right']} / {s['predicted']} "
            f"({s['predicted_unknown']}) |"
        )
    lines += [
        "",
        "| setting | kernel | ours | predicted | why not (predicted) | our error vs its reference "
        "| KB static | KB correct (trials) | KB max difference | agree |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kb_correct = _cell(r["kb_correct"]) + (f" {r['kb_trials']}" if r["kb_trials"] else "")
        if r["kb_error"]:
            kb_correct = f"error: {_cell(r['kb_error'])[:200]}"
        static = _cell(r["kb_static_valid"])
        if r["kb_static_errors"]:
            static += f" ({_cell(r['kb_static_errors'])})"
        lines.append(
            f"| {r['setting']} | {r['kernel']} | {_cell(r['ours_status'])} | {_cell(r['predicted'])} "
            f"| {_cell(r['predicted_why_not'])} | {_cell(r['measured_error'])} | {static} "
            f"| {kb_correct} | {_cell(r['kb_max_difference'])} | {_cell(r['agree'])} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Command line


def judge_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every kernel of every --run judged (each distinct problem and source once)."""
    problems = level_problems(args.problems, args.level)
    seen: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for setting, run_dir in args.run:
        results_file = run_dir / RESULTS_NAME
        results = json.loads(results_file.read_text()) if results_file.exists() else {}
        for kernel in sorted(run_dir.glob("level_*_kernel.py")):
            m = KERNEL.match(kernel.name)
            if not m or int(m.group(1)) != args.level:
                continue
            pid, sample = int(m.group(2)), int(m.group(3))
            problem = problems.get(pid)
            if problem is None:
                judged = {"error": f"no problem {pid} in level {args.level} under {args.problems}"}
            else:
                key = hashlib.sha256(kernel.read_bytes() + str(problem).encode()).hexdigest()
                if key not in seen:
                    print(f"judging {setting}: {kernel.name}", file=sys.stderr, flush=True)
                    seen[key] = run_judge(
                        args.judge,
                        problem,
                        kernel,
                        precision=args.precision,
                        timeout=args.timeout,
                        static_only=args.static_only,
                        perf_trials=args.perf_trials,
                    )
                judged = seen[key]
            ours = ours_for(results, pid, sample)
            rows.append(
                agreement_row(setting, kernel.name, ours, judged, static_only=args.static_only)
            )
    return rows


def _run_arg(text: str) -> tuple[str, Path]:
    label, _, path = text.rpartition("=")
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {path}")
    return label or run_dir.name, run_dir


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--run",
        type=_run_arg,
        action="append",
        required=True,
        metavar="[LABEL=]RUN_DIR",
        help="an exported run (repeat for several)",
    )
    ap.add_argument(
        "--problems",
        type=Path,
        required=True,
        help="the KernelBench problems (a checkout, or its KernelBench/ folder)",
    )
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--judge", type=Path, default=DEFAULT_JUDGE, help="KernelBench's kb_judge.py")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16"))
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per kernel")
    ap.add_argument(
        "--perf-trials",
        type=int,
        default=None,
        help="KernelBench's timing trials per kernel (its default 100)",
    )
    ap.add_argument("--static-only", action="store_true", help="its static checker alone (CPU)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "."))
    args = ap.parse_args(argv)
    if not args.judge.is_file():
        ap.error(f"KernelBench's judge not found: {args.judge}")
    return args  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = judge_runs(args)
    summary = summarise(rows)
    command = "python benchmarks/kb_judge_agreement.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"command": command, "summary": summary, "kernels": rows}
    (args.out / "kb_agreement.json").write_text(json.dumps(record, indent=2) + "\n")
    text = render_markdown(summary, rows, command)
    (args.out / "kb_agreement.md").write_text(text)
    print(text)
    return 0 if rows and all(r["kb_error"] is None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
