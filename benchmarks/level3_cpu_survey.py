"""Draft and verify each reduced level-3 network on the CPU, one at a time (issue 33).

    python3 benchmarks/level3_cpu_survey.py SMALL_DIR OUT.jsonl [--draft-timeout 600]
        [--verify-timeout 600] [--only 3_DeepNarrowMLP ...] [--trials 2] [--target none]
        [--input-scales 100] [--draft-only]

SMALL_DIR is what benchmarks/level3_small.py wrote. For each network: `python3 -m tools.draft
FILE --json --sizes S` (auto, the default; session 19 ran dynamic) under `timeout`, then, when it drafted, `python3 -m
agent verify FILE DRAFT --device cpu --policy strict --json --allow-large --trials N --target
T --input-scales S` under `timeout`. One
JSON line per network is appended to OUT.jsonl: drafted or not (the error's first line), the
verify status and reason, and the seconds of each step. Drafts are kept beside OUT.jsonl.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], limit: float) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    proc = subprocess.run(["timeout", str(int(limit)), *cmd], cwd=REPO, capture_output=True,
                          text=True)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


def _first_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if not line.startswith((" ", "\t")) and ("Error" in line or "error" in line):
            return line.strip()[:300]
    return (lines[-1].strip()[:300] if lines else "")


def survey_one(problem: Path, drafts: Path, args: argparse.Namespace) -> dict:
    row: dict = {"network": problem.stem}
    rc, out, err, secs = _run([sys.executable, "-m", "tools.draft", str(problem), "--json",
                               "--sizes", args.sizes], args.draft_timeout)
    row["draft_s"] = round(secs, 1)
    if rc != 0:
        row["drafted"] = False
        row["draft_error"] = "timeout" if rc == 124 else _first_error_line(err)
        return row
    result = json.loads(out.strip().splitlines()[-1])
    draft = drafts / f"{problem.stem}.py"
    draft.write_text(result["source"])
    row.update(drafted=True, mixed=result.get("mixed"), kernels=len(result.get("kernels", [])))
    if args.draft_only:
        return row
    rc, out, err, secs = _run(
        [sys.executable, "-m", "agent", "verify", str(problem), str(draft), "--device", "cpu",
         "--policy", "strict", "--json", "--allow-large", "--trials", str(args.trials),
         "--target", args.target, "--input-scales", args.input_scales,
         "--timeout", str(args.verify_timeout)], args.verify_timeout + 120)
    row["verify_s"] = round(secs, 1)
    try:
        verdict = json.loads(out.strip().splitlines()[-1])
        row["status"] = verdict.get("status")
        row["reason"] = str(verdict.get("reason") or verdict.get("message") or "")[:400]
    except (ValueError, IndexError):
        row["status"] = "timeout" if rc == 124 else f"no verdict (rc {rc})"
        row["reason"] = _first_error_line(err)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("small", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--draft-timeout", type=float, default=600)
    parser.add_argument("--verify-timeout", type=float, default=600)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--target", default="none", help="agent verify's --target")
    parser.add_argument("--input-scales", default="100", help="agent verify's --input-scales")
    parser.add_argument("--draft-only", action="store_true", help="no agent verify")
    parser.add_argument("--sizes", default="auto", choices=["auto", "dynamic", "static"],
                        help="python -m tools.draft's --sizes (session 19's rows: dynamic)")
    parser.add_argument("--only", nargs="*", default=None, help="these networks, in this order")
    args = parser.parse_args(argv)
    drafts = args.out.parent / "drafts"
    drafts.mkdir(parents=True, exist_ok=True)
    problems = sorted(args.small.glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
    if args.only:  # in the order given
        problems = [args.small / f"{name}.py" for name in args.only]
    for problem in problems:
        row = survey_one(problem, drafts, args)
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
