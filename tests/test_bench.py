"""The benchmark runner: metrics by hand, then `python -m agent bench` in-process with scripted
replies (sample and loop modes, resume, rebuild, Ray)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.bench import (
    BenchConfig,
    SampleRecord,
    compute_report,
    fast_p,
    geomean,
    pass_at_k,
    profile_options,
)
from agent.cli import main
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from tests.helpers import EX, FAST_CLI, ROOT, fenced, last_json, write_replies

PROBLEMS = ("relu", "softmax", "sum_reduction")


def fenced_file(rel: str) -> str:
    """A reply carrying the example file `examples/<rel>`."""
    return fenced((EX / rel).read_text())


GOOD = {name: fenced_file(f"kernels/{name}.py") for name in PROBLEMS}
# Per problem, 2 samples: relu 2/2 correct, softmax 1/2, sum_reduction 0/2 -> pass@1 = 0.5
SCRIPT = {
    "relu": [GOOD["relu"], GOOD["relu"]],
    "softmax": [GOOD["softmax"], fenced_file("broken/softmax__mismatch.py")],
    "sum_reduction": [
        fenced_file("broken/sum_reduction__shape_mismatch.py"),
        "I cannot write that kernel.",
    ],
}


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    d = tmp_path / "problems"
    d.mkdir()
    for name in PROBLEMS:
        shutil.copy(EX / "problems" / f"{name}.py", d / f"{name}.py")
    return d


def bench(capsys, *args: str) -> tuple[int, dict]:
    rc = main(["bench", *args, "--json"])
    return rc, last_json(capsys)


@pytest.fixture
def replay_calls(monkeypatch) -> list[int]:
    """How many samples each call to a replay backend asked for."""
    calls: list[int] = []
    original = ReplayBackend.generate

    def generate(self, prompt, n=1, **kw):
        calls.append(n)
        return original(self, prompt, n, **kw)

    monkeypatch.setattr(ReplayBackend, "generate", generate)
    return calls


# -- metrics ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 0.7),
        (10, 0, 1, 0.0),
        (10, 0, 10, 0.0),
        (7, 7, 3, 1.0),
        (20, 1, 20, 1.0),
        (20, 1, 10, 0.5),
        (200, 3, 1, 0.015),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_matches_the_binomial_form():
    for n in range(1, 25):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1.0 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError):
        pass_at_k(5, 2, 6)


def test_fast_p_and_geomean():
    best = [2.5, 0.9, None, 1.2, None]  # None: not timed (or no correct kernel)
    solved = [True, True, True, True, False]
    assert fast_p(best, solved, 0.0) == pytest.approx(4 / 5)  # fast_0 = correctness rate
    assert fast_p(best, solved, 0.5) == pytest.approx(3 / 5)
    assert fast_p(best, solved, 1.0) == pytest.approx(2 / 5)
    assert fast_p(best, solved, 1.2) == pytest.approx(1 / 5)  # strictly greater than p
    assert fast_p(best, solved, 2.0) == pytest.approx(1 / 5)
    assert fast_p([], [], 1.0) == 0.0
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([0.5, 2.0, 1.0]) == pytest.approx(1.0)
    assert geomean([]) is None


def rec(
    problem: str,
    i: int,
    correct: bool,
    eager: float | None = None,
    compile_: float | None = None,
    status: str | None = None,
) -> SampleRecord:
    sp = {k: v for k, v in (("eager", eager), ("compile", compile_)) if v is not None}
    return SampleRecord(
        problem=problem,
        sample=i,
        source="llm:x",
        status=status or ("ok" if correct else "mismatch"),
        correct=correct,
        compiled=True,
        speedups=sp,
        device="cuda",
    )


def test_report_with_gpu_timings():
    settings = {"mode": "sample", "samples": 2, "per_problem": 2, "ks": [1, 2], "backend": "replay"}
    problems = [
        ("a", [rec("a", 0, True, 2.0, 1.1), rec("a", 1, True, 4.0, 0.9)], None, None),
        ("b", [rec("b", 0, True, 0.5, 0.25, status="slower"), rec("b", 1, False)], None, None),
        ("c", [rec("c", 0, False), rec("c", 1, False, status="crash")], None, None),
    ]
    r = compute_report(settings, problems)
    m = r["metrics"]
    assert r["timed"] and r["status"] == "ok"
    assert m["pass_at_k"] == {"1": pytest.approx(0.5), "2": pytest.approx(2 / 3)}
    assert m["fast_p"]["0"] == pytest.approx(2 / 3)
    assert m["fast_p"]["0.5"] == pytest.approx(1 / 3)  # b's 0.5x is not > 0.5
    assert m["fast_p"]["2"] == pytest.approx(1 / 3)  # a's best is 4x
    assert m["fast_p_per_sample"]["1"] == pytest.approx((2 / 2 + 0 + 0) / 3)
    assert m["geomean_speedup"]["eager"]["value"] == pytest.approx(math.sqrt(4.0 * 0.5))
    assert m["geomean_speedup"]["compile"]["value"] == pytest.approx(math.sqrt(1.1 * 0.25))
    assert m["statuses"] == {"crash": 1, "mismatch": 2, "ok": 2, "slower": 1}


def test_kernelbench_protocol_settings():
    cfg = BenchConfig(out="x", protocol="kernelbench", agent=AgentConfig(trials=2, atol=1e-3))
    v = cfg.verify_options()
    assert v.trials == 5 and v.tolerance.preset == "kernelbench-v0" and v.tolerance.atol is None
    popts = profile_options("kernelbench")
    assert popts is not None  # tools.profile is part of this repository
    assert popts.baseline == "eager" and popts.min_reps == popts.max_reps == 100
    assert BenchConfig(out="x", samples=5).ks == (1,)  # default ks capped at --samples
    assert BenchConfig(out="x", agent=AgentConfig(backend="compiler")).per_problem == 1


# -- the command --------------------------------------------------------------------------------


def test_sample_mode_report_and_files(tmp_path, capsys, problems, replay_calls):
    replies = write_replies(tmp_path / "r.jsonl", [t for p in PROBLEMS for t in SCRIPT[p]])
    out = tmp_path / "out"
    rc, r = bench(
        capsys,
        str(problems),
        "--mode",
        "sample",
        "--samples",
        "2",
        "--k",
        "1,2",
        "--backend",
        "replay",
        "--replies",
        replies,
        "--out",
        str(out),
        *FAST_CLI,
    )
    assert rc == 0 and r["status"] == "ok"
    assert replay_calls == [2, 2, 2]  # one call of n=2 per problem, first-round prompt
    m = r["metrics"]
    assert m["pass_at_k"]["1"] == pytest.approx(0.5)
    assert m["pass_at_k"]["2"] == pytest.approx(2 / 3)
    assert list(m["fast_p"]) == ["0"] and m["fast_p"]["0"] == pytest.approx(2 / 3)
    assert any("only fast_0" in n for n in r["notes"])
    by = {p["problem"]: p for p in r["problems"]}
    assert by["relu"]["statuses"] == {"ok": 2}
    assert by["softmax"]["statuses"] == {"mismatch": 1, "ok": 1}
    assert by["sum_reduction"]["statuses"] == {"bad_input": 1, "shape_mismatch": 1}
    for name in PROBLEMS:
        for i in (0, 1):
            d = out / name / f"{i:02d}"
            assert (d / "verdict.json").exists() and (d / "response.txt").exists()
    assert (out / "relu" / "00" / "kernel.py").exists()
    assert not (out / "sum_reduction" / "01" / "kernel.py").exists()  # the reply had no code
    assert "ModelNew" in (out / "relu" / "prompt.txt").read_text()
    md = (out / "report.md").read_text()
    assert "| softmax | 2 | 1 | 50.0% |" in md and "mismatch×1, ok×1" in md
    assert json.loads((out / "report.json").read_text())["metrics"] == m
    assert (out / "passk.png").exists() and not (out / "speedup.png").exists()

    # --rebuild makes the same report from the files alone
    (out / "report.json").unlink()
    (out / "report.md").unlink()
    rc, r2 = bench(capsys, "--rebuild", str(out))
    assert rc == 0 and r2["metrics"] == m and (out / "report.md").exists()


def test_resume_skips_what_is_done(tmp_path, capsys, problems, replay_calls):
    out = tmp_path / "out"
    common = ["--samples", "2", "--k", "1,2", "--backend", "replay", "--out", str(out), *FAST_CLI]
    # The script runs dry in the middle of softmax: an interruption after 3 of 6 candidates.
    first = write_replies(tmp_path / "r1.jsonl", SCRIPT["relu"] + SCRIPT["softmax"][:1])
    rc, r = bench(capsys, str(problems), "--replies", first, *common)
    assert rc == 1 and r["status"] == "incomplete"
    assert [p["n"] for p in r["problems"]] == [2, 1, 0]
    relu_mtime = (out / "relu" / "00" / "sample.json").stat().st_mtime_ns

    replay_calls.clear()
    rest = write_replies(tmp_path / "r2.jsonl", SCRIPT["softmax"][1:] + SCRIPT["sum_reduction"])
    rc, r = bench(capsys, str(problems), "--replies", rest, *common)
    assert rc == 0 and r["status"] == "ok"
    assert replay_calls == [1, 2]  # relu not asked again; softmax only for its missing sample
    assert r["metrics"]["pass_at_k"]["1"] == pytest.approx(0.5)
    assert (out / "relu" / "00" / "sample.json").stat().st_mtime_ns == relu_mtime

    # Results of one problem deleted: only that problem is drawn and evaluated again.
    shutil.rmtree(out / "softmax")
    replay_calls.clear()
    again = write_replies(tmp_path / "r3.jsonl", SCRIPT["softmax"])
    rc, r = bench(capsys, str(problems), "--replies", again, *common)
    assert rc == 0 and replay_calls == [2]
    assert r["metrics"]["pass_at_k"]["1"] == pytest.approx(0.5)

    # Other settings into the same --out are refused (exit 2), not mixed in.
    rc, r = bench(
        capsys, str(problems), "--replies", again, *common[:-6], "--trials", "3", "--target", "none"
    )
    assert rc == 2 and "other settings" in r["message"]


def test_loop_mode(tmp_path, capsys, problems, replay_calls):
    # relu: mismatch, then fixed with feedback; softmax: right first time
    replies = write_replies(
        tmp_path / "r.jsonl",
        [fenced_file("broken/relu__mismatch.py"), GOOD["relu"], GOOD["softmax"]],
    )
    out = tmp_path / "out"
    args = [
        str(problems),
        "--only",
        "relu,softmax",
        "--mode",
        "loop",
        "--samples",
        "3",
        "--k",
        "1,2,3",
        "--backend",
        "replay",
        "--replies",
        replies,
        "--out",
        str(out),
        *FAST_CLI,
    ]
    rc, r = bench(capsys, *args)
    assert rc == 0 and r["status"] == "ok"
    assert replay_calls == [1, 1, 1]
    assert r["metrics"]["pass_at_k"] == {"1": 0.5, "2": 1.0, "3": 1.0}
    assert [p["statuses"] for p in r["problems"]] == [{"mismatch": 1, "ok": 1}, {"ok": 1}]
    assert (
        "elements outside atol"
        in (out / "relu" / "run" / "attempts" / "01" / "prompt.txt").read_text()
    )
    assert (out / "relu" / "01" / "kernel.py").exists() and (out / "relu" / "done.json").exists()
    assert "success@k" in (out / "report.md").read_text()

    replay_calls.clear()  # rerun: both problems are done, nothing is asked
    rc, r = bench(capsys, *args)
    assert rc == 0 and replay_calls == []


def test_bad_input_exits_2(tmp_path, capsys):
    rc, r = bench(capsys, str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"))
    assert rc == 2 and "not found" in r["message"]
    rc, r = bench(capsys, "--rebuild", str(tmp_path))
    assert rc == 2 and "bench.json" in r["message"]


def test_throughput_harness_imports_no_heavy_agent_modules():
    """benchmarks/throughput.py runs on a GPU box without langgraph, rich or openai."""
    code = (
        "import sys\n"
        "for m in ('langgraph', 'rich', 'openai'):\n"
        "    sys.modules[m] = None\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "import throughput, agent.bench, agent.evaluation, agent.drafters\n"
        "assert throughput.candidates(30) and len(throughput.candidates(30)) == 30\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr


def test_ray_executor_on_a_local_instance(tmp_path, capsys, problems):
    pytest.importorskip(
        "ray",
        reason="local-only, not run in CI: needs `pip install 'triton-agent[ray]'` "
        "(ray is not in the test extra)",
    )
    replies = write_replies(tmp_path / "r.jsonl", SCRIPT["relu"][:1] + SCRIPT["softmax"][1:])
    out = tmp_path / "out"
    rc, r = bench(
        capsys,
        str(problems),
        "--only",
        "relu,softmax",
        "--samples",
        "1",
        "--executor",
        "ray",
        "--backend",
        "replay",
        "--replies",
        replies,
        "--out",
        str(out),
        *FAST_CLI,
    )
    assert rc == 0, r
    assert [p["statuses"] for p in r["problems"]] == [{"ok": 1}, {"mismatch": 1}]
    assert r["metrics"]["pass_at_k"]["1"] == pytest.approx(0.5)
    assert (out / "softmax" / "00" / "verdict.json").exists()
