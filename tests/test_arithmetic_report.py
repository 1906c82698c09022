"""The arithmetic in the reports (issue 35): the bench report (report.json, report.md,
report.html) names each problem's kernel's arithmetic and counts kernels per arithmetic; a
run's report.html names each attempt's. Read from the verdicts (`Verdict.arithmetic`)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.bench.config import BenchConfig
from agent.bench.report import rebuild_report
from agent.config import AgentConfig
from agent.html_report import render_run
from tools.checks.arithmetic import cell, count_kernels, summary

# problem -> [(record, verdict's arithmetic or None for a verdict without the field)]
SAMPLES = {
    "conv": [
        ({"status": "ok", "correct": True, "speedups": {"eager": 1.2, "compile": 1.1}},
         ["fp32", "bf16x3"]),
        ({"status": "ok", "correct": True, "speedups": {"eager": 1.0, "compile": 0.9}},
         ["tf32x3"]),
    ],
    "gemm": [
        ({"status": "mismatch", "correct": False}, ["tf32"]),
        ({"status": "ok", "correct": True, "speedups": {"eager": 2.0, "compile": 1.5}}, ["tf32"]),
    ],
    "relu": [({"status": "ok", "correct": True, "speedups": {"eager": 1.0, "compile": 1.0}},
              ["fp32"])],
    "old": [({"status": "ok", "correct": True, "speedups": {"eager": 1.0, "compile": 1.0}},
             None)],
    "bad": [({"status": "mismatch", "correct": False}, ["bf16"])],
}  # fmt: skip


def bench_dir(root: Path) -> Path:
    out = root / "bench"
    cfg = BenchConfig(out=str(out), samples=2, agent=AgentConfig(backend="compiler"))
    settings = {**cfg.settings(), "problems_path": str(out), "problems": list(SAMPLES)}
    out.mkdir(parents=True)
    (out / "bench.json").write_text(json.dumps(settings))
    for name, samples in SAMPLES.items():
        for i, (record, arithmetic) in enumerate(samples):
            sd = out / name / f"{i:02d}"
            sd.mkdir(parents=True)
            verdict = {"status": record["status"], "correct": record["correct"]}
            if arithmetic is not None:
                verdict["arithmetic"] = arithmetic
            (sd / "verdict.json").write_text(json.dumps(verdict))
            base = {"problem": name, "sample": i, "source": "compiler", "compiled": True}
            (sd / "sample.json").write_text(json.dumps({**base, "device": "cuda", **record}))
    return out


def test_bench_report_names_and_counts_the_arithmetic(tmp_path):
    out = bench_dir(tmp_path)
    report = rebuild_report(out)
    by = {p["problem"]: p for p in report["problems"]}
    # the row describes the fastest correct candidate; its samples carry their own
    assert by["conv"]["arithmetic"] == ["fp32", "bf16x3"]
    assert [s["arithmetic"] for s in by["conv"]["samples"]] == [["fp32", "bf16x3"], ["tf32x3"]]
    assert by["gemm"]["arithmetic"] == ["tf32"]  # the correct one, not the first
    assert by["old"]["arithmetic"] == [] and by["bad"]["arithmetic"] == ["bf16"]
    # one count per problem with a correct kernel; a verdict without the field is not counted
    counts = report["metrics"]["arithmetic"]
    assert counts == {
        "kernels": {"fp32": 2, "bf16x3": 1, "tf32": 1},
        "counted": 3,
        "outside_fp32_contract": ["gemm"],
    }
    md = (out / "report.md").read_text()
    assert "| statuses | arithmetic |" in md
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ")}
    assert rows["conv"].endswith("| fp32, bf16x3 |")
    assert rows["gemm"].endswith("| tf32 (outside the fp32 contract) |")
    assert rows["old"].endswith("| - |")
    assert (
        "Note: Arithmetic of the 3 problems' reported kernels (one kernel can use several): "
        "fp32 2, bf16x3 1, tf32 1; outside the fp32 contract (docs/verification.md): 1 (gemm)"
    ) in md
    html = (out / "report.html").read_text()
    assert "<th" in html and ">arithmetic<" in html
    assert "fp32, bf16x3" in html and "tf32 (outside the fp32 contract)" in html
    assert "Arithmetic of the 3 problems&#x27; reported kernels" in html


def test_run_report_names_each_attempts_arithmetic(tmp_path):
    d = tmp_path / "run"
    for i, arithmetic in enumerate([["tf32"], ["fp32", "tf32x3"]]):
        a = d / "attempts" / f"{i:02d}"
        a.mkdir(parents=True)
        (a / "kernel.py").write_text("# kernel\n")
        (a / "verdict.json").write_text(json.dumps({"status": "ok", "arithmetic": arithmetic}))
        meta = {"index": i, "source": "llm:test", "status": "ok", "summary": f"attempt {i}"}
        (a / "attempt.json").write_text(json.dumps(meta))
    (d / "report.json").write_text(json.dumps({"command": "optimize", "status": "ok"}))
    html = render_run(d)
    assert ">arithmetic<" in html
    assert "tf32 (outside the fp32 contract)" in html and "fp32, tf32x3" in html


def test_cells_and_counts():
    assert cell(["fp32", "bf16x3"]) == "fp32, bf16x3"
    assert cell(["fp16", "unknown"]) == "fp16 (outside the fp32 contract), unknown"
    assert cell([]) == "-" and cell(None) == "-"
    counts = count_kernels([("a", ["fp32"]), ("b", []), ("c", ["bf16", "fp32"])])
    assert counts == {
        "kernels": {"fp32": 2, "bf16": 1},
        "counted": 2,
        "outside_fp32_contract": ["c"],
    }
    assert summary(counts).startswith("arithmetic of the 2 kernels (one kernel can use several)")
    assert summary(count_kernels([])) is None
