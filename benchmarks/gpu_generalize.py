"""`--generalize` over the candidates a GPU bench drafted (issue 15, item 5 "Sizes", on the GPU).

`benchmarks/generalize_level1.py` drafts reduced copies on the CPU. The candidates a bench keeps
on the GPU are other drafts: GPU picks (convolution variants, GEMM tiles, launch configs) and the
sized path (static kernels for the problem's sizes, dynamic ones elsewhere). This runs each of
them through `python -m agent verify PROBLEM KERNEL --generalize --json` at the problem's
published sizes, `--jobs` at a time on the device, and records the verdict and the
generalisation check's outcome (the sizes tried, what failed and why).

    python benchmarks/gpu_generalize.py BENCH_DIR [--kb .kb/level1] [--only 20,35]
        [--jobs 8] [--device cuda] [--trials 2] [--verify-timeout 300] [--deadline S]
        [--out DIR] [--shrink [--batch 3 --channels 8 --out-channels N --spatial N]]
        [--job-timeout S] [--libdevice-as-tl]

`--libdevice-as-tl` (for the CPU interpreter, which has no libdevice): the kernel is checked as
a copy whose `libdevice.NAME(...)` calls are the `tl` calls or small jit helpers of the CPU
drafter's own rewrite (`tools.draft.interp`), written under `--out/kernels/`; the size logic is
untouched, so what the generalisation check says of sizes holds for the GPU file.

`--shrink` (for the CPU interpreter): each problem is checked as a reduced-size copy
(`generalize_level1.shrink_source`, the same copies and caps as the CPU drafts' table), written
under `--out/problems/`. A GPU draft's sized path then takes its dynamic kernels (the copy's
sizes are not the recorded ones), and `--generalize` varies the copy's sizes again. A rerun with
`--only` replaces those rows of an earlier `results.json` under `--out` and keeps the others.

BENCH_DIR is an `agent bench --out` directory (`PROBLEM/00/kernel.py`; the first candidate
with a kernel is checked); the problem files are `--kb/PROBLEM.py`. Writes `results.json` and
`table.md` under `--out` as problems finish, so a run cut short keeps what it measured;
`--deadline` (seconds from the start) starts nothing after it and stops what still runs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generalize_level1 import Caps, shrink_source, verify_generalize  # noqa: E402


def libdevice_as_tl(source: str) -> tuple[str, list[str]]:
    """`source` with its libdevice calls as the CPU drafter's `tl` equivalents (`tools.draft.
    interp`), and the names rewritten; names it has none for stay (the check then fails to
    compile, and says so)."""
    from tools.draft.interp import LIBDEVICE_AS_HELPER, LIBDEVICE_AS_TL

    names: list[str] = []
    helpers: list[str] = []

    def swap(m: re.Match) -> str:
        name = m.group(1)
        if name in LIBDEVICE_AS_TL:
            names.append(name)
            return LIBDEVICE_AS_TL[name]
        if name in LIBDEVICE_AS_HELPER:
            names.append(name)
            params, body = LIBDEVICE_AS_HELPER[name]
            helper = f"@triton.jit\ndef libdevice_{name}({params}):\n    {body}\n"
            if helper not in helpers:
                helpers.append(helper)
            return f"libdevice_{name}"
        return m.group(0)

    out = re.sub(r"(?<![\w.])libdevice\.(\w+)", swap, source)
    anchor = "from triton.language.extra import libdevice\n"
    if helpers and anchor in out:
        out = out.replace(anchor, anchor + "\n\n" + "\n\n".join(helpers) + "\n", 1)
    return out, sorted(set(names))


def candidates(bench: Path, kb: Path, only: set[int]) -> list[tuple[str, Path, Path]]:
    """(problem, problem file, kernel file) for each problem of the bench with a kernel."""
    out = []
    for d in sorted(p for p in bench.iterdir() if p.is_dir()):
        number = d.name.split("_", 1)[0]
        if only and (not number.isdigit() or int(number) not in only):
            continue
        problem = kb / f"{d.name}.py"
        kernels = sorted(d.glob("[0-9]*/kernel.py"))
        if problem.is_file() and kernels:
            out.append((d.name, problem, kernels[0]))
    return out


def check(name: str, problem: Path, kernel: Path, args: argparse.Namespace, stop_at: float) -> dict:
    row: dict = {
        "problem": name,
        "kernel": str(kernel.relative_to(args.bench.parent)),
        "run": args.command,
    }
    if args.shrink:
        copy, changes = shrink_source(problem.read_text(), args.caps)
        problem = args.out / "problems" / problem.name
        problem.parent.mkdir(parents=True, exist_ok=True)
        problem.write_text(copy)
        row["shrunk"] = {k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()}
    if args.libdevice_as_tl:
        source, names = libdevice_as_tl(kernel.read_text())
        if names:
            kernel = args.out / "kernels" / f"{name}.py"
            kernel.parent.mkdir(parents=True, exist_ok=True)
            kernel.write_text(source)
            row["libdevice_as_tl"] = names
    limit = min(args.verify_timeout, max(1.0, stop_at - time.monotonic()))
    extra = [
        *(["--allow-large"] if args.shrink else []),
        *(["--timeout", str(args.job_timeout)] if args.job_timeout else []),
    ]
    verify_generalize(
        row, problem, kernel, device=args.device, trials=args.trials, extra=extra, timeout=limit
    )
    return row


def _unless_late(
    name: str, problem: Path, kernel: Path, args: argparse.Namespace, stop_at: float
) -> dict | None:
    """`check`, unless the deadline has passed before this problem's turn (None)."""
    if time.monotonic() >= stop_at:
        return None
    return check(name, problem, kernel, args, stop_at)


def write(rows: list[dict], out: Path, command: str, pending: list[str]) -> None:
    rows = sorted(rows, key=lambda r: r["problem"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["generalize"]] = counts.get(r["generalize"], 0) + 1
    runs = sorted({r.get("run", command) for r in rows} | {command})
    lines = [
        *(f"- `{c}`" for c in runs),
        "",
        "| generalize | count |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in sorted(counts.items())),
        f"| not run (deadline) | {len(pending)} |",
        "",
        "| problem | verify | generalize | s | sizes tried / why |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        why = "; ".join(r["generalize_notes"]) or r["message"]
        lines.append(
            f"| {r['problem']} | {r['status']} | {r['generalize']} | {r['verify_s']} | "
            + why.replace("|", "/").replace("\n", " ")[:400]
            + " |"
        )
    (out / "table.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--kb", type=Path, default=ROOT / ".kb/level1")
    ap.add_argument("--only", default="", help="comma-separated problem numbers")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--verify-timeout", type=float, default=300)
    ap.add_argument("--deadline", type=float, default=float("inf"))
    ap.add_argument("--out", type=Path, default=Path("generalize_gpu"))
    ap.add_argument("--shrink", action="store_true", help="check reduced-size copies")
    ap.add_argument("--batch", type=int, default=Caps.batch)
    ap.add_argument("--channels", type=int, default=Caps.channels)
    ap.add_argument("--out-channels", type=int, default=None)
    ap.add_argument("--spatial", type=int, default=None, help="one cap for every spatial size")
    ap.add_argument("--job-timeout", type=float, default=None, help="agent verify --timeout")
    ap.add_argument("--libdevice-as-tl", action="store_true", help="for the interpreter")
    args = ap.parse_args(argv)
    args.caps = Caps(
        batch=args.batch,
        channels=args.channels,
        out_channels=args.out_channels,
        spatial=(args.spatial,) * 3 if args.spatial else Caps.spatial,
    )
    if not args.bench.is_dir() or not args.kb.is_dir():
        print(f"not a directory: {args.bench if not args.bench.is_dir() else args.kb}")
        return 2
    only = {int(x) for x in args.only.split(",") if x.strip()}
    todo = candidates(args.bench, args.kb, only)
    if not todo:
        print(f"no problem of {args.kb} has a kernel in {args.bench}")
        return 2
    command = "python benchmarks/gpu_generalize.py " + " ".join(argv or sys.argv[1:])
    args.command = command
    stop_at = time.monotonic() + args.deadline
    rows: list[dict] = []
    previous = args.out / "results.json"
    if only and previous.exists():  # a partial rerun replaces its rows, keeps the others
        redo = {name for name, _, _ in todo}
        rows = [r for r in json.loads(previous.read_text()) if r["problem"] not in redo]
    pending = [name for name, _, _ in todo]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {}
        for name, problem, kernel in todo:
            futures[pool.submit(_unless_late, name, problem, kernel, args, stop_at)] = name
        for f in concurrent.futures.as_completed(futures):
            row = f.result()
            if row is not None:
                rows.append(row)
                pending.remove(futures[f])
                write(rows, args.out, command, pending)
                print(f"{row['problem']}: {row['status']}, generalize {row['generalize']}")
    write(rows, args.out, command, pending)
    return 0 if all(r["generalize"] == "passed" for r in rows) and not pending else 1


if __name__ == "__main__":
    sys.exit(main())
