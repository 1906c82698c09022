"""Issue 34 on a GPU: the corpus's two device memos (`tests/adversarial/matmul__memo_device_flag`,
`matmul__memo_device_loop_bound`), their honest twins (the memo branch disabled, as
benchmarks/gpu_s16_call2.sh does) and the honest GEMM example, each verified at the corpus's own
size (67x129x95) and at 1024^3, and the corpus's honest spin lock
(`mse_loss__spin_lock_accumulate_honest`: its first runs slow, every later run fast), several at
once on one GPU. Prints one line per verification: the verdict, and for the GEMM (or locked)
launch the device times the rule saw (`tools.checks.launch_times`: trials' first runs, the fresh runs
in a repeat's position or after another call (control and unchecked calls), repeated runs), and
writes them all as JSON.

    python3 benchmarks/memo_check.py --out "$OUT/memo_check.json" [--jobs 4] [--trials 5]

Run by benchmarks/gpu_memo_check.sh; on the CPU, `--dry-run` only builds the cases.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tools.orchestrate.verdict_rules as verdict_rules  # noqa: E402 - after the path

CORPUS = ROOT / "tests" / "adversarial"
TWINS = {
    # the memo branch disabled: the flag is never this value / the loop bound is always K's
    "memo_device_flag": (
        "if tl.load(flag_ptr) == 0:",
        "if tl.load(flag_ptr) == -123456789:",
    ),
    "memo_device_loop_bound": (
        "steps = tl.load(steps_ptr)  # 0 on",
        "steps = tl.load(steps_ptr) * 0 + tl.cdiv(K, BK)  # 0 on",
    ),
}
EXPECTED = {"memo": "cheat", "twin": "ok", "example": "ok", "honest": "ok"}
SPIN_LOCK = CORPUS / "mse_loss__spin_lock_accumulate_honest.py"

_seen = threading.local()
_captured: dict[str, list] = {}
_repeated_work = verdict_rules.repeated_work


def _capturing(data, notes):
    """The verdict rules' input, kept for the report (the rule's own numbers)."""
    _captured[getattr(_seen, "label", "?")] = list(data.get("launch_times") or [])
    return _repeated_work(data, notes)


verdict_rules.repeated_work = _capturing


def kernels() -> dict[str, tuple[str, str]]:
    """label -> (kind: memo / twin / example, source)."""
    out = {}
    for kind, (memo_line, twin_line) in TWINS.items():
        source = (CORPUS / f"matmul__{kind}.py").read_text()
        twin = source.replace(memo_line, twin_line)
        if twin == source:
            raise SystemExit(f"the twin of {kind} did not apply: check its memo line")
        out[kind] = ("memo", source)
        out[f"{kind}_twin"] = ("twin", twin)
    out["matmul_example"] = ("example", (ROOT / "examples/kernels/matmul.py").read_text())
    return out


def problems(where: Path) -> dict[str, Path]:
    source = (ROOT / "examples/problems/matmul.py").read_text()
    big = re.sub(r"^([MKN]) = \d+$", r"\1 = 1024", source, flags=re.MULTILINE)
    if big.count("= 1024") != 3:
        raise SystemExit("examples/problems/matmul.py: M, K, N not found")
    path = where / "matmul1024.py"
    path.write_text(big)
    return {"67x129x95": ROOT / "examples/problems/matmul.py", "1024^3": path}


def gemm_times(runs: list[dict]) -> dict:
    """The GEMM launch's (the one named like `_matmul_kernel`/`_gemm`; the spin lock's
    `_mse_locked`) times over the trials: first runs', control and unchecked calls' (fresh
    values after another call), repeated runs'."""
    got: dict[str, list] = {"first_ms": [], "control_ms": [], "repeated_ms": []}
    for r in runs:
        which = {"first": "first_ms", "control": "control_ms", "unchecked": "control_ms"}
        for name, _grid, _digest, ms in r.get("launches", []):
            if ms is not None and any(k in name for k in ("matmul", "gemm", "_mse_locked")):
                got[which.get(r["run"], "repeated_ms")].append(round(ms, 4))
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="memo_check.json")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--dry-run", action="store_true", help="build the cases, verify nothing")
    ap.add_argument("--device", default="cuda", help="cpu: the small size only, a smoke test")
    args = ap.parse_args()
    from tools.core.problem import read_problem
    from tools.orchestrate.verify import Verifier, VerifyOptions

    tmp = Path(tempfile.mkdtemp(prefix="memo_check_"))
    sizes = problems(tmp)
    if args.device == "cpu":  # the interpreter at 1024^3 is refused as too slow
        del sizes["1024^3"]
    cases = [(size, p, label, k) for size, p in sizes.items() for label, k in kernels().items()]
    spin = ("honest", SPIN_LOCK.read_text())
    cases.append(("mse_loss", ROOT / "examples/problems/mse_loss.py", "spin_lock_honest", spin))
    if args.dry_run:
        for size, p, label, (kind, _src) in cases:
            print(f"{size:10} {label:28} expected {EXPECTED[kind]} ({p.name})")
        return 0
    opts = VerifyOptions(
        device=args.device, trials=args.trials, timeout_s=args.timeout, jobs_per_gpu=args.jobs
    )
    verifier = Verifier(opts)

    def one(case):
        size, path, label, (kind, source) = case
        _seen.label = f"{size} {label}"
        t0 = time.monotonic()
        try:
            v = verifier.verify(read_problem(path), source, str(tmp / f"{label}.py"))
            status, message, notes = v.status, v.message, list(v.evidence.notes)
        except Exception as exc:  # the harness failed: a row, not the end of the check
            status, message, notes = "harness_crash", f"{type(exc).__name__}: {exc}", []
        row = {
            "size": size,
            "kernel": label,
            "expected": EXPECTED[kind],
            "status": status,
            "seconds": round(time.monotonic() - t0, 1),
            "gemm": gemm_times(_captured.get(f"{size} {label}", [])),
            "message": message[:600],
            "timing_notes": [n for n in notes if "device time" in n or "not refused" in n],
        }
        flag = "" if status == row["expected"] else "   <-- not as expected"
        g = row["gemm"]
        print(
            f"{size:10} {label:28} {status:10} ({row['seconds']} s) GEMM first {g['first_ms']} "
            f"control {g['control_ms']} repeated {g['repeated_ms']} ms{flag}\n"
            f"    {message[:300]}",
            flush=True,
        )
        return row

    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, cases))
    Path(args.out).write_text(json.dumps(rows, indent=1))
    wrong = [r for r in rows if r["status"] != r["expected"]]
    print(f"{len(rows)} verifications, {len(wrong)} not as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
