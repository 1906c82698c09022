"""`--generalize` over KernelBench level 1 on the CPU (issue 15, item 5 "Sizes").

For each level-1 problem: write a reduced-size copy (the module-level size variables shrunk so
the problem runs in seconds under the Triton interpreter), draft it with the compiler drafter
(`tools.draft.draft_candidate(source, device="cpu")`, in a subprocess under a timeout), then run
`python -m agent verify COPY.py DRAFT.py --generalize --json` (a subprocess under a timeout) and
record: drafted or why not, the verdict's status, and the generalisation check (the sizes tried,
what failed and why).

    python benchmarks/generalize_level1.py [--only 20,35,...] [--jobs 2] [--kb .kb/level1]
        [--out benchmarks/results/cpu/generalize_level1] [--batch 3] [--channels 8]
        [--spatial 8] [--out-channels 8] [--job-timeout S]

`--batch`, `--channels`, `--spatial` make the copies smaller still (the defaults, batch 3,
channels 8, spatial 8 (3D) / 12 (2D) / 32 (1D), are those of the first runs): a 3D problem
whose dynamic draft launches a program per output element takes over a second a program in the
interpreter. `--job-timeout` is `agent verify --timeout` (seconds per candidate job).

Writes `results.json` and `table.md` under `--out` (rewritten as problems finish, so a run cut
short keeps what it measured).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETTING = re.compile(r"kernel|stride|padding|dilation|groups|return_indices|eps|alpha|slope|margin")
"""Module-level names that are settings, not sizes: never shrunk."""
SPATIAL = re.compile(r"^dim\d$|depth|height|width|length|^sequence_length$")
CHANNELS = re.compile(r"channels|features|heads")
CLASS_OF = [  # (problem number range, class) for the table
    (range(1, 19), "matmul"),
    (range(19, 33), "elementwise"),
    (range(33, 41), "norm"),
    (range(41, 47), "pooling"),
    (range(47, 54), "reduction"),
    (range(54, 88), "conv"),
    (range(88, 94), "scan"),
    (range(94, 101), "loss/attention"),
]
"""KernelBench level 1's blocks of problems (50 is a conv network's first layer)."""


def problem_class(number: int) -> str:
    if number == 50:
        return "conv"
    return next((c for r, c in CLASS_OF if number in r), "other")


@dataclass(frozen=True)
class Caps:
    """The reduced sizes: batch, channels, and spatial sizes by the number of spatial dims."""

    batch: int = 3
    channels: int = 8
    spatial: tuple[int, int, int] = (32, 12, 8)
    """(1D, 2D, 3D and more)"""
    out_channels: int | None = None
    """`out_channels` (None: `channels`). The generalisation check keeps a constructor-only
    size under 8 (a setting), so a conv's output channels vary only from 8 up."""


def shrunk_value(name: str, value: int, n_spatial: int, order: int = 0, caps: Caps = Caps()) -> int:
    """The reduced value of one module-level integer size (settings and small values stay).
    `order`: the how-manieth generic size this is, so GEMM dimensions differ (48, 40, 56)."""
    if name == "batch_size" and value > caps.batch:
        return caps.batch  # the generalisation check's 3 // 2 + 1 = 2 still changes it
    if SETTING.search(name):
        return value
    if name == "out_channels" and caps.out_channels:
        return min(value, caps.out_channels)
    if CHANNELS.search(name) and name != "features" and "heads" not in name:
        return min(value, caps.channels)
    if SPATIAL.search(name):
        cap = caps.spatial[min(max(n_spatial, 1), 3) - 1]
    elif value <= 8:
        return value
    elif name == "features":  # GroupNorm's 8 groups: 2 channels each (1 each specialises)
        return 16
    elif "heads" in name:  # 97: 8 heads of 32 were 384 softmax programs at 93 ms each
        return 2
    elif name == "num_classes":
        return 16
    else:  # GEMM dimensions, an elementwise `dim`, an embedding
        cap = (48, 40, 56, 36)[order % 4]
    if value <= cap:
        return value
    return cap - 1 if value % 2 else cap  # an odd size stays odd (4095 -> 11)


def shrink_source(source: str, caps: Caps = Caps()) -> tuple[str, dict[str, object]]:
    """A reduced-size copy of a KernelBench problem: module-level integer (and tuple-of-integer)
    constants shrunk, and integer literals over 64 inside `get_inputs` set to 16 (50's 224x224
    image). Returns the new source and the changes made ({name: (old, new)})."""
    tree = ast.parse(source)
    names = [
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    ]
    n_spatial = sum(1 for n in names if SPATIAL.search(n))
    changes: dict[str, object] = {}
    lines = source.splitlines()
    edits: list[tuple[int, int, int, str]] = []  # (line, col, end_col, text), same-line nodes
    order = 0
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        name = target.id
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            try:  # `M = 1024 * 2`: constant arithmetic
                value = eval(compile(ast.Expression(node.value), "<size>", "eval"), {})  # noqa: S307
            except Exception:
                continue  # `groups = in_channels`: follows another constant
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            new: object = shrunk_value(name, value, n_spatial, order, caps)
            order += not (SPATIAL.search(name) or CHANNELS.search(name) or value <= 8)
        elif isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            if SETTING.search(name) or not any(
                isinstance(e, ast.Constant) for e in ast.walk(node.value)
            ):
                continue
            new = tuple(shrunk_value("shape", v, n_spatial) for v in value)
        else:
            continue
        if new != value:
            changes[name] = (value, new)
            edits.append(
                (node.value.lineno, node.value.col_offset, node.value.end_col_offset, repr(new))
            )
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and type(sub.value) is int and sub.value > 64:
                    changes[f"get_inputs literal {sub.value}"] = (sub.value, 16)
                    edits.append((sub.lineno, sub.col_offset, sub.end_col_offset, "16"))
    for lineno, col, end, text in sorted(edits, reverse=True):
        line = lines[lineno - 1]
        lines[lineno - 1] = line[:col] + text + line[end:]
    return "\n".join(lines) + "\n", changes


DRAFT_SCRIPT = """
import json, sys
from tools.draft import draft_candidate
src = open(sys.argv[1]).read()
try:
    r = draft_candidate(src, device="cpu")
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:2000]}))
    raise SystemExit(0)
open(sys.argv[2], "w").write(r.source)
print(json.dumps({"dynamic": r.dynamic, "fixed_sizes": r.fixed_sizes, "notes": r.notes,
                  "library_calls": r.library_calls, "kernels": r.kernels}))
"""


def last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def run_problem(
    path: Path,
    work: Path,
    draft_timeout: float,
    verify_timeout: float,
    caps: Caps = Caps(),
    job_timeout: float | None = None,
    run: dict | None = None,
) -> dict:
    """Shrink, draft and verify one problem; every outcome is a row, never an exception.
    `run`: the command and start time recorded in the row."""
    number = int(path.name.split("_")[0])
    row: dict = {"problem": path.stem, "number": number, "class": problem_class(number)}
    if run:
        row["run"] = run
    source, changes = shrink_source(path.read_text(), caps)
    row["shrunk"] = {k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()}
    copy, draft = work / path.name, work / f"{path.stem}__draft.py"
    copy.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # Inductor needs it off
    env["PYTHONPATH"] = str(ROOT)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", DRAFT_SCRIPT, str(copy), str(draft)],
            capture_output=True,
            text=True,
            timeout=draft_timeout,
            cwd=work,
            env=env,
        )
        info = last_json(proc.stdout) or {
            "error": f"drafter exited {proc.returncode}: " + proc.stderr.strip()[-600:]
        }
    except subprocess.TimeoutExpired:
        info = {"error": f"drafting took over {draft_timeout:.0f} s"}
    row["draft_s"] = round(time.monotonic() - t0, 1)
    if "error" in info:
        row.update(drafted=False, draft_error=info["error"], status="no draft")
        return row
    row.update(
        drafted=True,
        dynamic=info["dynamic"],
        fixed_sizes=info["fixed_sizes"],
        library_calls=info["library_calls"],
        draft_notes=[n for n in info["notes"] if "sizes fixed" in n],
    )
    verify_generalize(
        row,
        copy,
        draft,
        device="cpu",
        trials=2,
        # --allow-large: the timeout bounds it; 43 was refused at 157 ms a program
        extra=["--allow-large", *(["--timeout", str(job_timeout)] if job_timeout else [])],
        timeout=verify_timeout,
        env=env,
    )
    return row


def verify_generalize(
    row: dict,
    problem: Path,
    kernel: Path,
    *,
    device: str,
    trials: int,
    extra: list[str],
    timeout: float,
    env: dict | None = None,
) -> None:
    """`python -m agent verify PROBLEM KERNEL --generalize --json` in a subprocess under
    `timeout`; its verdict and the generalisation check's outcome into `row` (`verify_s`,
    `status`, `message`, `generalize_notes`, `generalize`). Shared with gpu_generalize.py."""
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "agent", "verify", str(problem), str(kernel), "--generalize"]
    cmd += ["--json", "--trials", str(trials), "--device", device]
    cmd += [*(["--target", "none"] if device == "cpu" else []), *extra]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
        )
        verdict = last_json(proc.stdout) or {
            "status": f"no verdict (exit {proc.returncode})",
            "message": proc.stderr.strip()[-600:],
        }
    except subprocess.TimeoutExpired:
        verdict = {"status": "harness timeout", "message": f"verify took over {timeout:.0f} s"}
    row["verify_s"] = round(time.monotonic() - t0, 1)
    row["status"] = verdict.get("status")
    row["message"] = (verdict.get("message") or "")[:800]
    notes = (verdict.get("evidence") or {}).get("notes") or []
    row["generalize_notes"] = [n for n in notes if "generalisation" in n or "depends on" in n]
    row["generalize"] = generalize_outcome(row["status"], row["generalize_notes"])


def generalize_outcome(status: str | None, notes: list[str]) -> str:
    text = " ".join(notes)
    if "generalisation check passed" in text:
        return "passed"
    if "generalisation check failed" in text:
        return "failed"
    if "no size constants to vary" in text:
        return "nothing to vary"
    if "generalisation check skipped" in text:
        return "skipped"
    return "not run" if status != "ok" else "unknown"


def write_results(rows: list[dict], out: Path, command: str, started: str) -> None:
    rows = sorted(rows, key=lambda r: r["number"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.get("generalize", r["status"])] = (
            counts.get(r.get("generalize", r["status"]), 0) + 1
        )
    runs: list[dict] = []  # the runs rows came from (a row without one: from before they were kept)
    for r in rows:
        run = r.get("run") or {"command": command, "started": started}
        if run not in runs:
            runs.append(run)
    runs.sort(key=lambda r: r["started"])
    lines = [
        "| # | problem | class | drafted | dynamic | verify | generalize | sizes tried / why | run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        why = r.get("draft_error") or "; ".join(r.get("generalize_notes", []))
        if r.get("status") not in ("ok", None, "no draft"):
            why = f"{r.get('message', '')} {why}"
        why = why.replace("|", "\\|").replace("\n", " ")[:400]
        lines.append(
            f"| {r['number']} | {r['problem']} | {r['class']} | {'yes' if r['drafted'] else 'no'}"
            f" | {r.get('dynamic', '')} | {r['status']} | {r.get('generalize', '')} | {why}"
            f" | {runs.index(r.get('run') or {'command': command, 'started': started}) + 1} |"
        )
    totals = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    shown = "\n".join(
        f"{i}. `{r['command']}` (started {r['started']})" for i, r in enumerate(runs, 1)
    )
    (out / "table.md").write_text(
        f"Runs:\n\n{shown}\n\n{len(rows)} problems; {totals}\n\n" + "\n".join(lines) + "\n"
    )


def spread(paths: list[Path]) -> list[Path]:
    """Round-robin over the classes, so a run cut short still covers every class."""
    by_class: dict[str, list[Path]] = {}
    for p in paths:
        by_class.setdefault(problem_class(int(p.name.split("_")[0])), []).append(p)
    queues = list(by_class.values())
    order = []
    while any(queues):
        order += [q.pop(0) for q in queues if q]
    return order


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kb", default=str(ROOT / ".kb/level1"))
    ap.add_argument("--only", default="", help="comma-separated problem numbers")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--draft-timeout", type=float, default=300)
    ap.add_argument("--verify-timeout", type=float, default=240)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/cpu/generalize_level1"))
    ap.add_argument("--batch", type=int, default=Caps.batch, help="batch_size cap")
    ap.add_argument("--channels", type=int, default=Caps.channels, help="channel count cap")
    ap.add_argument("--out-channels", type=int, default=None, help="out_channels cap")
    ap.add_argument(
        "--spatial",
        type=int,
        default=None,
        help="spatial size cap (default 32 / 12 / 8 for 1D / 2D / 3D)",
    )
    ap.add_argument(
        "--job-timeout", type=float, default=None, help="agent verify --timeout (s per job)"
    )
    args = ap.parse_args(argv)
    caps = Caps(
        batch=args.batch,
        channels=args.channels,
        out_channels=args.out_channels,
        spatial=(args.spatial,) * 3 if args.spatial else Caps.spatial,
    )
    paths = sorted(Path(args.kb).glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
    if args.only:
        wanted = {int(n) for n in args.only.split(",")}
        paths = [p for p in paths if int(p.name.split("_")[0]) in wanted]
    paths = spread(paths)
    work = Path(tempfile.mkdtemp(prefix="generalize-level1-"))
    command = "python benchmarks/generalize_level1.py " + " ".join(argv or sys.argv[1:])
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list[dict] = []
    previous = Path(args.out) / "results.json"
    if args.only and previous.exists():  # a partial rerun replaces its rows, keeps the others
        done = {p.stem for p in paths}
        rows = [r for r in json.loads(previous.read_text()) if r["problem"] not in done]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            pool.submit(
                run_problem,
                p,
                work,
                args.draft_timeout,
                args.verify_timeout,
                caps,
                args.job_timeout,
                {"command": command, "started": started},
            ): p
            for p in paths
        }
        for fut in concurrent.futures.as_completed(futures):
            row = fut.result()
            rows.append(row)
            print(
                f"{row['problem']}: {row['status']} / {row.get('generalize', '')} "
                f"({row.get('draft_s', 0)} + {row.get('verify_s', 0)} s)",
                file=sys.stderr,
            )
            write_results(rows, Path(args.out), command, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
