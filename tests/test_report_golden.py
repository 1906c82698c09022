"""The reports, pinned (issue 37: the report code split into steps, its output unchanged). The
bench report (`compute_report` + `add_arithmetic`, `render_markdown`, `render_bench`) and the run
report (`render_run`) of small fixed inputs, compared with what they rendered before the split
(tests/fixtures/report_golden/). The inputs: the recorded H200 bench of session 3
(benchmarks/results/gpu/2026-11-29-s3/run5_bench), as it is and varied to reach the other
branches (loop mode, nothing timed on a CPU, a problem that could not run, one not reached).

An intended change of a report regenerates the fixtures: REPORT_GOLDEN_WRITE=1 runs this file
once to write them (then review the diff)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent.bench.report import add_arithmetic, compute_report, read_arithmetic, render_markdown
from agent.bench.store import BenchDir, load_results
from agent.html_report import render_bench, render_run
from tests.helpers import ROOT, recorded_bench
from tools.core.results import strict_json

GPU_BENCH = recorded_bench()  # benchmarks/results/gpu/2026-11-29-s3/run5_bench.tgz
GOLDEN = ROOT / "tests/fixtures/report_golden"
WRITE = os.environ.get("REPORT_GOLDEN_WRITE") == "1"


def _recorded(folder: str) -> tuple[dict[str, Any], list, dict]:
    out = GPU_BENCH / folder
    settings, problems = load_results(out)
    return settings, problems, read_arithmetic(BenchDir(out), problems)


def _beside_the_bar(r):
    """A timed record with eager also timed in fp32 and with cudnn.benchmark."""
    if not r.speedups.get("eager"):
        return r
    e = r.speedups["eager"]
    return dataclasses.replace(
        r, speedups={**r.speedups, "eager_fp32": 0.9 * e, "eager_cudnn_benchmark": 1.1 * e}
    )


def _as_loop(settings, problems, arithmetic):
    """Loop mode: the first problem's first candidate the compiler's (a free success), every
    other problem finished but the last; eager also timed beside the bar."""
    rows = []
    for i, (name, recs, err, _) in enumerate(problems):
        recs = [_beside_the_bar(r) for r in recs]
        if i == 0 and recs:
            recs = [dataclasses.replace(recs[0], source="compiler"), *recs[1:]]
        rows.append((name, recs, err, i < len(problems) - 1))
    return {**settings, "mode": "loop"}, rows, arithmetic


def _on_a_cpu(settings, problems, arithmetic):
    """Nothing timed (a CPU run), fewer candidates than the largest k, a problem that could not
    run and one not reached; half precision (the fp32 contract does not apply)."""
    rows = []
    for i, (name, recs, err, fin) in enumerate(problems):
        recs = [
            dataclasses.replace(r, speedups={}, device="cpu", memory={}, limit="")
            for r in recs[: 1 + i % 3]
        ]
        if i == 1:
            recs, err = [], "ValueError: get_inputs failed\nsecond line | with a bar"
        if i == 2:
            recs = []
        rows.append((name, recs, err, fin))
    return {**settings, "precision": "bf16"}, rows, arithmetic


CASES = {
    "replay": lambda: _recorded("bench_replay"),
    "compiler": lambda: _recorded("bench_compiler"),
    "replay_loop": lambda: _as_loop(*_recorded("bench_replay")),
    "replay_cpu": lambda: _on_a_cpu(*_recorded("bench_replay")),
}


def _bench_report(case: str) -> dict[str, Any]:
    settings, problems, arithmetic = CASES[case]()
    report = compute_report(settings, problems)
    add_arithmetic(report, arithmetic)
    report["elapsed_s"] = 123.4
    return report


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing: REPORT_GOLDEN_WRITE=1 writes it"
    expected = path.read_text()
    if text != expected:  # the first differing line, not two whole pages
        got, want = text.splitlines(), expected.splitlines()
        at = next(
            (i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want))
        )
        pytest.fail(
            f"{name} differs from the pinned output at line {at + 1}:\n"
            f"  got:  {got[at][:300] if at < len(got) else '(end)'}\n"
            f"  want: {want[at][:300] if at < len(want) else '(end)'}"
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bench_report_is_as_pinned(case: str):
    report = _bench_report(case)
    _check(f"{case}.json", strict_json(report, indent=2) + "\n")
    _check(f"{case}.md", render_markdown(report))
    _check(f"{case}.html", render_bench(report))


def test_the_run_report_is_as_pinned(tmp_path: Path):
    from tests.test_html_report import gpu_run

    run = gpu_run(tmp_path)
    _check("run_gpu.html", render_run(run))
    report = json.loads((run / "report.json").read_text())
    report.update(timed=False, device="cpu", precision="bf16", best=None, baselines={})
    (run / "report.json").write_text(json.dumps(report))
    for a in sorted((run / "attempts").iterdir()):
        meta = json.loads((a / "attempt.json").read_text())
        meta.update(speedups={}, speedup=None, profile=None)
        (a / "attempt.json").write_text(json.dumps(meta))
    (run / "attempts/01/prompt.txt").unlink()
    _check("run_cpu.html", render_run(run))
