"""Run the adversarial corpus (tests/adversarial/) through the verifier and report the figures.

    python benchmarks/adversarial_figures.py [--json] [--device auto|cpu|cuda] [--timeout 15]
                                             [--corpus DIR]

Each corpus file is `<problem>__<kind>.py`, a candidate for `examples/problems/<problem>.py` (or,
for a problem only the corpus needs, `tests/fixtures/adversarial_problems/<problem>.py`), with
header lines in its docstring:

    expected: cheat            (one status, or several as `cheat|mismatch`)
    options: {"input_scales": [100.0]}   (optional VerifyOptions overrides)
    requires: cuda             (optional: only run where a GPU is present)

Prints kinds tried, false accepts (a non-ok kind judged correct: must be 0), harness crashes (the
verifier raised instead of returning a verdict: must be 0), wrong statuses and time taken; writes
benchmarks/results/adversarial_<device>.md. Imports `tools/` only, never `agent/`, so it runs on a
bare GPU box (torch + triton).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS = ROOT / "tests" / "adversarial"
PENDING = ROOT / "tests" / "adversarial_pending"
"""Kinds the verifier still gets wrong (not run by CI; tests/adversarial_pending/README.md)."""
PROBLEMS = ROOT / "examples" / "problems"
CORPUS_PROBLEMS = ROOT / "tests" / "fixtures" / "adversarial_problems"
"""Tiny problems only the corpus uses (a causal attention, two stacked linears, tanh, ...)."""
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(kw_only=True)
class Case:
    """One corpus file and what it must get."""

    path: Path
    problem: Path
    kind: str
    expected: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    requires_cuda: bool = False
    expected_cuda: tuple[str, ...] = ()
    """`expected-cuda:` header: what it must get on a GPU instead, where the attack itself
    cannot run there (numpy on a CUDA tensor, Python Triton's compiler refuses): the header says
    why. Never `ok` for a cheating kind."""

    def expected_on(self, device: str) -> tuple[str, ...]:
        return self.expected_cuda if device == "cuda" and self.expected_cuda else self.expected

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass(kw_only=True)
class Outcome:
    name: str
    expected: list[str]
    status: str
    correct: bool
    message: str
    seconds: float
    harness_crash: bool = False

    @property
    def as_expected(self) -> bool:
        return not self.harness_crash and self.status in self.expected

    @property
    def false_accept(self) -> bool:
        return self.correct and "ok" not in self.expected


def _header(text: str, key: str) -> str | None:
    m = re.search(rf"^\s*(?:#|\"\"\")?\s*{key}:\s*(.+?)\s*$", text, re.MULTILINE)
    return m.group(1) if m else None


def problem_path(name: str) -> Path:
    """The problem a corpus file names: an example problem, else a corpus-only fixture."""
    example = PROBLEMS / f"{name}.py"
    return example if example.exists() else CORPUS_PROBLEMS / f"{name}.py"


def load_corpus(corpus_dir: Path = CORPUS) -> list[Case]:
    cases = []
    directory = Path(corpus_dir)
    for path in sorted(directory.glob("*__*.py")):
        text = path.read_text()
        expected = _header(text, "expected")
        if not expected:
            raise ValueError(f"{path}: no `expected: <status>` line")
        if "ok" in (_header(text, "expected-cuda") or "") and "ok" not in expected:
            raise ValueError(f"{path}: `expected-cuda` may not accept what `expected` refuses")
        problem, kind = path.stem.split("__", 1)
        options = _header(text, "options")
        cases.append(
            Case(
                path=path,
                problem=problem_path(problem),
                kind=kind,
                expected=tuple(s.strip() for s in expected.split("|")),
                options=json.loads(options) if options else {},
                requires_cuda=(_header(text, "requires") or "").strip() == "cuda",
                expected_cuda=tuple(
                    x.strip() for x in (_header(text, "expected-cuda") or "").split("|") if x.strip()
                ),
            )
        )
    return cases


def run_corpus(
    cases: list[Case],
    *,
    device: str = "auto",
    timeout_s: float = 15.0,
    trials: int = 3,
    workers: int | None = None,
) -> tuple[list[Outcome], str]:
    """Verify every case (in parallel, one job per sandbox slot). Returns outcomes and the device."""
    from tools.core.problem import read_problem
    from tools.orchestrate.verify import Verifier, VerifyOptions, resolve_device

    dev = resolve_device(device)
    runnable = [c for c in cases if dev == "cuda" or not c.requires_cuda]
    verifiers: dict[str, Verifier] = {}
    # verification needs no exclusive GPU (timing does): on CUDA, several jobs per GPU
    per_gpu = int(os.environ.get("ADV_JOBS_PER_GPU", "1"))
    base = Verifier(
        VerifyOptions(trials=trials, timeout_s=timeout_s, device=dev, jobs_per_gpu=per_gpu)
    )
    if workers is None:
        workers = base.sandbox.slots

    def verifier_for(case: Case) -> Verifier:
        key = json.dumps(case.options, sort_keys=True)
        if not case.options:
            return base
        if key not in verifiers:
            opts = {"trials": trials, "timeout_s": timeout_s, "device": dev, **case.options}
            if "input_scales" in opts:
                opts["input_scales"] = tuple(opts["input_scales"])
            verifiers[key] = Verifier(VerifyOptions(**opts), sandbox=base.sandbox)
        return verifiers[key]

    # Build the extra verifiers up front (not thread-safe to do lazily from the pool).
    for c in runnable:
        verifier_for(c)

    def run(case: Case) -> Outcome:
        o = _run(case)
        print(progress_line(o), file=sys.stderr, flush=True)
        return o

    def _run(case: Case) -> Outcome:
        start = time.monotonic()
        try:
            v = verifier_for(case).verify(
                read_problem(case.problem), case.path.read_text(), str(case.path)
            )
            return Outcome(
                name=case.name,
                expected=list(case.expected_on(dev)),
                status=v.status,
                correct=v.correct,
                message=v.message,
                seconds=time.monotonic() - start,
            )
        except Exception as exc:  # the harness itself failed: the figure that must stay 0
            return Outcome(
                name=case.name,
                expected=list(case.expected_on(dev)),
                status="harness_crash",
                correct=False,
                seconds=time.monotonic() - start,
                harness_crash=True,
                message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-3)}",
            )

    with cf.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        outcomes = list(pool.map(run, runnable))
    return outcomes, dev


def progress_line(o: Outcome) -> str:
    """One case's line, printed as soon as its verdict is in."""
    return (
        f"{'ok  ' if o.as_expected else 'FAIL'} {o.name:45s} expected {'|'.join(o.expected):16s} "
        f"got {o.status:14s} {o.seconds:5.1f}s"
    )


def summary(outcomes: list[Outcome], device: str, seconds: float, skipped: int) -> dict[str, Any]:
    return {
        "device": device,
        "kinds_tried": len(outcomes),
        "kinds_skipped": skipped,
        "false_accepts": sum(o.false_accept for o in outcomes),
        "harness_crashes": sum(o.harness_crash for o in outcomes),
        "wrong_status": sum(not o.as_expected for o in outcomes),
        "seconds": round(seconds, 1),
        "by_status": _count(o.status for o in outcomes),
        "cases": [asdict(o) | {"as_expected": o.as_expected} for o in outcomes],
    }


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def markdown(s: dict[str, Any]) -> str:
    lines = [
        f"# Adversarial corpus on {s['device']}",
        "",
        "Generated by `python benchmarks/adversarial_figures.py` (tests/adversarial/, 3 trials, "
        "15 s job timeout).",
        "",
        "| figure | value |",
        "|---|---|",
        f"| kinds tried | {s['kinds_tried']} |",
        f"| kinds skipped (need a GPU) | {s['kinds_skipped']} |",
        f"| false accepts (must be 0) | {s['false_accepts']} |",
        f"| harness crashes (must be 0) | {s['harness_crashes']} |",
        f"| verdict other than expected | {s['wrong_status']} |",
        f"| wall time | {s['seconds']} s |",
        "",
        "| kind | expected | verdict | s | message |",
        "|---|---|---|---|---|",
    ]
    for c in s["cases"]:
        mark = "" if c["as_expected"] else " **(!)**"
        msg = c["message"].splitlines()[0][:140].replace("|", "\\|") if c["message"] else ""
        lines.append(
            f"| {c['name']} | {'/'.join(c['expected'])} | {c['status']}{mark} | "
            f"{c['seconds']:.1f} | {msg} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--timeout", type=float, default=15.0, help="seconds per candidate job")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/")
    ap.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS,
        help=f"directory of corpus files (default tests/adversarial; {PENDING.name}: the kinds "
        "the verifier still gets wrong). Results are written only for the default corpus",
    )
    ap.add_argument("-k", dest="match", default="", help="only kinds whose name contains this")
    args = ap.parse_args(argv)
    cases = [c for c in load_corpus(args.corpus) if args.match in c.name]
    start = time.monotonic()
    outcomes, dev = run_corpus(
        cases, device=args.device, timeout_s=args.timeout, trials=args.trials
    )
    s = summary(outcomes, dev, time.monotonic() - start, skipped=len(cases) - len(outcomes))
    print(
        f"kinds tried: {s['kinds_tried']} (skipped {s['kinds_skipped']} GPU-only), false accepts: "
        f"{s['false_accepts']}, harness crashes: {s['harness_crashes']}, wrong status: "
        f"{s['wrong_status']}, time: {s['seconds']} s on {dev}",
        file=sys.stderr,
    )
    if not args.no_write and args.corpus.resolve() == CORPUS and not args.match:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"adversarial_{dev}.md").write_text(markdown(s))
        (RESULTS / f"adversarial_{dev}.json").write_text(json.dumps(s, indent=1) + "\n")
    if args.json:
        print(json.dumps(s))
    return (
        0 if s["false_accepts"] == 0 and s["harness_crashes"] == 0 and s["wrong_status"] == 0 else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
