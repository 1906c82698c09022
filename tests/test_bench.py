"""The benchmark runner: metrics by hand, then `python -m agent bench` in-process with scripted
replies (sample and loop modes, resume, rebuild, Ray)."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.bench import (
    BenchConfig,
    SampleRecord,
    compute_report,
    fast_p,
    geomean,
    pass_at_k,
    peak_memory,
    percentile,
    profile_options,
)
from agent.cli import main
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from tests.helpers import EX, FAST_CLI, ROOT, fenced, last_json, sigint_as_default, write_replies

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
    **more,
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
        **more,
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


def test_report_time_memory_and_outcomes_per_problem():
    settings = {"mode": "sample", "samples": 2, "per_problem": 2, "ks": [1], "backend": "x"}
    t = 1_000_000.0  # epoch seconds
    problems = [
        # two candidates evaluated side by side: time sums them, span runs first start to last end
        (
            "a",
            [
                rec(
                    "a",
                    0,
                    True,
                    2.0,
                    1.5,
                    wall_s=10.0,
                    started_at=t,
                    ended_at=t + 10,
                    memory={"host_peak_mb": 900.0, "gpu_peak_mb": 300.0},
                ),
                rec(
                    "a",
                    1,
                    True,
                    0.5,
                    0.2,
                    status="slower",
                    wall_s=6.0,
                    started_at=t + 1,
                    ended_at=t + 7,
                    memory={"host_peak_mb": 1000.0},
                ),
            ],
            None,
            None,
        ),
        # every correct candidate slower; a record of an older version: no wall_s, no times
        (
            "b",
            [
                rec("b", 0, True, 0.8, 0.5, status="slower", duration_s=4.0),
                rec("b", 1, False, wall_s=2.0, memory={"gpu_peak_mb": 50.0}),
            ],
            None,
            None,
        ),
        # failures only: the most frequent status (the earliest on a tie)
        (
            "c",
            [
                rec("c", 0, False, status="crash", wall_s=1.0),
                rec("c", 1, False, status="mismatch", wall_s=1.0),
            ],
            None,
            None,
        ),
        ("d", [], None, None),  # not reached
        ("e", [], "the reference raised", None),  # could not run
    ]
    r = compute_report(settings, problems)
    by = {p["problem"]: p for p in r["problems"]}
    assert (by["a"]["time_s"], by["a"]["span_s"]) == (16.0, 10.0)
    assert (by["a"]["peak_host_mb"], by["a"]["peak_gpu_mb"]) == (1000.0, 300.0)
    assert (by["b"]["time_s"], by["b"]["span_s"]) == (6.0, None)  # 4.0 (duration_s) + 2.0
    assert (by["b"]["peak_host_mb"], by["b"]["peak_gpu_mb"]) == (None, 50.0)
    assert by["d"]["time_s"] is None and by["d"]["peak_gpu_mb"] is None
    assert [by[n]["outcome"] for n in "abcde"] == ["ok", "slower", "crash", "incomplete", "error"]
    m = r["metrics"]
    assert m["outcomes"] == {"crash": 1, "error": 1, "incomplete": 1, "ok": 1, "slower": 1}
    assert r["totals"]["no_verdict"] == 2 and r["totals"]["complete"] == 3
    # times 16, 6, 2 (problems with a verdict): median 6, p90 = 6 + 0.8 * (16 - 6)
    assert m["time_per_problem_s"] == {"median": 6.0, "p90": 14.0, "total": 24.0, "problems": 3}
    assert m["peak_memory_mb"]["host"] == {"median": 1000.0, "max": 1000.0, "problems": 1}
    assert m["peak_memory_mb"]["gpu"] == {"median": 175.0, "max": 300.0, "problems": 2}
    # fast_1 over torch.compile: only a's 1.5x is > 1, over all five problems
    assert m["fast_p_compile"]["1"] == pytest.approx(1 / 5)
    assert m["fast_p"]["1"] == pytest.approx(1 / 5)


def test_percentile():
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.9) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 0.5) == pytest.approx(2.5)
    assert percentile(list(range(11)), 0.9) == pytest.approx(9.0)


def test_peak_memory_reads_what_is_there():
    verdict = {"status": "ok", "evidence": {"memory": {"host_peak_mb": 100, "gpu_peak_mb": 50}}}
    profile = {
        "memory": {"host_peak_mb": 300.5, "gpu_peak_mb": "n/a"},
        "verdict": {"evidence": {"memory": {"gpu_peak_mb": 70}}},
        "reverified": {"evidence": {"memory": {"gpu_peak_mb": float("nan")}}},
    }
    assert peak_memory(verdict, profile) == {"host_peak_mb": 300.5, "gpu_peak_mb": 70.0}
    # absent, null or malformed: nothing, never an error
    junk = [None, {}, {"evidence": None}, {"memory": [1, 2]}, {"evidence": {"memory": None}}]
    junk += [{"memory": {"host_peak_mb": True, "gpu_peak_mb": -1, "x": None}}, "text"]
    assert peak_memory(*junk) == {}


def test_kernelbench_protocol_settings():
    cfg = BenchConfig(out="x", protocol="kernelbench", agent=AgentConfig(trials=2, atol=1e-3))
    v = cfg.verify_options()
    assert v.trials == 5 and v.tolerance.preset == "kernelbench-v0" and v.tolerance.atol is None
    popts = profile_options("kernelbench")
    assert popts is not None  # tools.orchestrate.profile is part of this repository
    assert popts.baseline == "eager" and popts.kernelbench  # its own 100-trial timing beside ours
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
    # every candidate names the version of the code that judged it (issue 35: one run of one
    # version), and the report says it
    from tools.core.code_version import code_version

    assert r["totals"]["code_versions"] == {code_version(): 6}
    assert f"code version {code_version()}" in md

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


# -- what a GPU run leaves on disk: report columns and the KernelBench summary ------------------

T0 = 1_800_000_000.0  # epoch seconds


def fabricate_bench(out: Path, samples: dict, errors: dict | None = None) -> Path:
    """A compiler-backend bench directory as a GPU run leaves it: bench.json, and per problem
    its 00/{sample,verdict,profile}.json (`samples[name]` = (record, verdict, profile), or None
    for a problem not reached) or error.json."""
    errors = errors or {}
    cfg = BenchConfig(out=str(out), samples=1, agent=AgentConfig(backend="compiler"))
    names = [*samples, *errors]
    settings = {**cfg.settings(), "problems_path": str(out), "problems": names}
    out.mkdir(parents=True)
    (out / "bench.json").write_text(json.dumps(settings))
    for name in names:
        (out / name).mkdir()
        (out / name / "problem.json").write_text(json.dumps({"name": name}))
    for name, spec in samples.items():
        if spec is None:
            continue
        record, verdict, profile = spec
        sd = out / name / "00"
        sd.mkdir()
        (sd / "verdict.json").write_text(json.dumps(verdict))
        if profile is not None:
            (sd / "profile.json").write_text(json.dumps(profile))
        base = {"problem": name, "sample": 0, "source": "compiler", "compiled": True}
        (sd / "sample.json").write_text(json.dumps({**base, "device": "cuda", **record}))
    for name, msg in errors.items():
        (out / name / "error.json").write_text(json.dumps({"error": msg}))
    return out


def level1_dir(root: Path) -> Path:
    return fabricate_bench(
        root / "level1",
        {
            # memory only in the files (the record was written without it)
            "1_matmul": (
                {
                    "status": "ok",
                    "correct": True,
                    "speedups": {"eager": 2.0, "compile": 1.1},
                    "wall_s": 12.5,
                    "duration_s": 12.5,
                    "started_at": T0,
                    "ended_at": T0 + 14,
                },
                {"status": "ok", "evidence": {"memory": {"host_peak_mb": 250, "gpu_peak_mb": 40}}},
                {"status": "ok", "memory": {"host_peak_mb": 300.0, "gpu_peak_mb": 70.0}},
            ),
            # a record of an older version: no wall_s, no start/end, no memory anywhere
            "2_conv": (
                {"status": "mismatch", "correct": False, "duration_s": 3.5},
                {"status": "mismatch", "evidence": {}},
                None,
            ),
            "3_relu": None,
        },
        {"4_big": "the reference ran out of memory\ntraceback..."},
    )


def level2_dir(root: Path) -> Path:
    return fabricate_bench(
        root / "level2",
        {
            "1_conv_relu": (
                {
                    "status": "slower",
                    "correct": True,
                    "speedups": {"eager": 0.9, "compile": 1.3},
                    "wall_s": 20.0,
                    "duration_s": 20.0,
                    "started_at": T0,
                    "ended_at": T0 + 20,
                    "memory": {"host_peak_mb": 500.0, "gpu_peak_mb": 1000.0},
                },
                {"status": "ok", "evidence": {}},
                {"status": "ok"},
            ),
        },
    )


def test_rebuilt_report_has_time_and_memory_columns(tmp_path, capsys):
    out = level1_dir(tmp_path)
    rc, r = bench(capsys, "--rebuild", str(out))
    assert rc == 1 and r["status"] == "incomplete"  # two problems have no verdict
    by = {p["problem"]: p for p in r["problems"]}
    assert by["1_matmul"]["peak_host_mb"] == 300.0 and by["1_matmul"]["peak_gpu_mb"] == 70.0
    assert by["1_matmul"]["samples"][0]["memory"] == {"host_peak_mb": 300.0, "gpu_peak_mb": 70.0}
    assert (by["2_conv"]["time_s"], by["2_conv"]["span_s"]) == (3.5, None)
    assert [by[n]["outcome"] for n in by] == ["ok", "mismatch", "incomplete", "error"]
    m = r["metrics"]
    assert m["time_per_problem_s"] == {"median": 8.0, "p90": 11.6, "total": 16.0, "problems": 2}
    assert m["peak_memory_mb"]["gpu"] == {"median": 70.0, "max": 70.0, "problems": 1}
    assert r["totals"]["no_verdict"] == 2
    md = (out / "report.md").read_text()
    assert (
        "| 1_matmul | 1 | 1 | 100.0% | 2.00x | 1.10x | 1.10x | - | - | - | 12.5 | 14.0 | 300 | 70 "
        "| ok×1 |" in md
    )
    assert "| 2_conv | 1 | 0 | 0.0% | - | - | - | - | - | - | 3.5 | - | - | - | mismatch×1 |" in md
    assert "| 3_relu | 0 | 0 | - | - | - | - | - | - | - | - | - | - | - | - |" in md
    assert "Problems by outcome: error 1, incomplete 1, mismatch 1, ok 1; no verdict yet: 2." in md
    assert "median 8.0 s, p90 11.6 s" in md and "GPU median 70.0 MB, max 70.0 MB" in md


def load_summary_script():
    spec = importlib.util.spec_from_file_location(
        "kernelbench_summary", ROOT / "benchmarks" / "kernelbench_summary.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_kernelbench_summary_over_two_levels(tmp_path, capsys):
    summary = load_summary_script()
    d1, d2 = level1_dir(tmp_path), level2_dir(tmp_path)
    assert summary.main([str(d1), str(d2)]) == 0
    md = capsys.readouterr().out
    # problems, with/without a verdict, pass@1 (all, judged), fast_1 eager/compile, geomeans,
    # time median/p90, host median/max, GPU median/max
    assert (
        "| level1 | 4 | 2 | 2 | 25.0% | 50.0% | 25.0% | 25.0% | 2.00x (1) | 1.10x (1) | 1.10x (1) | - | 8.0 s "
        "| 11.6 s | 300 | 300 | 70 | 70 |"
    ) in md
    assert (
        "| level2 | 1 | 1 | 0 | 100.0% | 100.0% | 0.0% | 100.0% | 0.90x (1) | 1.30x (1) | 0.90x (1) | - | 20.0 s "
        "| 20.0 s | 500 | 500 | 1000 | 1000 |"
    ) in md
    assert (
        "| all | 5 | 3 | 2 | 40.0% | 66.7% | 20.0% | 40.0% | 1.34x (2) | 1.20x (2) | 0.99x (2) | - | 12.5 s "
        "| 18.5 s | 400 | 500 | 535 | 1000 |"
    ) in md
    assert "| set | ok | slower | mismatch | error | incomplete |" in md
    assert "| all | 1 | 1 | 1 | 1 | 1 |" in md and "| level2 | 0 | 1 | 0 | 0 | 0 |" in md
    assert "- level1/4_big: the reference ran out of memory" in md
    assert "Candidate statuses, all: mismatch 1, ok 1, slower 1" in md

    assert summary.main([str(tmp_path / "nowhere")]) == 2


# -- stopping at a deadline ---------------------------------------------------------------------


def test_sigint_reports_what_is_done_and_the_rerun_resumes(tmp_path):
    """SIGINT (`timeout --signal=INT` at a deadline): the finished candidate stays, the one
    still running is killed after --stop-grace and not recorded (its killed job is no crash
    verdict), the report is written, exit 1; the rerun evaluates only what is missing."""
    problems = tmp_path / "problems"
    problems.mkdir()
    for name in ("relu", "softmax"):
        shutil.copy(EX / "problems" / f"{name}.py", problems / f"{name}.py")
    # relu's candidate spins forever (far past --timeout's reach of this test); softmax's is good
    replies = write_replies(
        tmp_path / "r.jsonl", [fenced_file("broken/relu__timeout.py"), GOOD["softmax"]]
    )
    out = tmp_path / "out"
    args = ["--samples", "1", "--backend", "replay", "--replies", replies, "--out", str(out)]
    args += ["--trials", "2", "--target", "none", "--timeout", "300", "--stop-grace", "1"]
    cmd = [sys.executable, "-m", "agent", "bench", str(problems), *args, "--json"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_default,
    )  # fmt: skip
    try:
        done = out / "softmax" / "00" / "sample.json"
        t0 = time.monotonic()
        while not done.exists() and proc.poll() is None and time.monotonic() - t0 < 240:
            time.sleep(0.2)
        assert done.exists(), proc.stderr.read() if proc.poll() is not None else "too slow"
        proc.send_signal(signal.SIGINT)
        t1 = time.monotonic()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.monotonic() - t1 < 90, "the spinning job was waited for, not killed"
    assert proc.returncode == 1, stderr
    r = json.loads(stdout.strip().splitlines()[-1])
    assert r["status"] == "incomplete" and r["interrupted"] is True
    assert [(p["problem"], p["n"], p["outcome"]) for p in r["problems"]] == [
        ("relu", 0, "incomplete"),
        ("softmax", 1, "ok"),
    ]
    assert not (out / "relu" / "00" / "sample.json").exists()
    assert not (out / "relu" / "error.json").exists()
    # softmax's record: its share of the model call plus its evaluation, start before end
    s = json.loads(done.read_text())
    assert s["wall_s"] == pytest.approx(s["duration_s"] + s["draft_s"], abs=2e-3)
    assert s["started_at"] <= s["ended_at"] and s["wall_s"] > 0
    drafted = json.loads((out / "relu" / "00" / "draft.json").read_text())
    assert drafted["drafted_at"] is not None  # drawn, not evaluated: kept for the rerun

    # The rerun evaluates relu's drawn candidate (a good one now) without asking the model
    # (an empty script would fail if asked) and leaves softmax alone.
    (out / "relu" / "00" / "kernel.py").write_text((EX / "kernels" / "relu.py").read_text())
    softmax_mtime = done.stat().st_mtime_ns
    args[args.index(replies)] = write_replies(tmp_path / "none.jsonl", [])
    p = subprocess.run(
        [sys.executable, "-m", "agent", "bench", str(problems), *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert [p["outcome"] for p in r["problems"]] == ["ok", "ok"]
    assert done.stat().st_mtime_ns == softmax_mtime
    relu = json.loads((out / "relu" / "00" / "sample.json").read_text())
    assert relu["started_at"] == drafted["drafted_at"]  # the problem's span includes the pause


def _profile(candidate_ms, eager_ms, compile_ms, floor_ms, bound):
    roof = {"floor_ms": floor_ms, "bound": bound, "compute_roof": "fp32"}
    return {
        "roofline": roof,
        "candidate": {"median_ms": candidate_ms},
        "eager": {"median_ms": eager_ms},
        "compiled": {"median_ms": compile_ms},
    }


def test_slowdown_reason_names_the_roof_and_who_reaches_it():
    from tools.checks.roofline import slowdown_reason

    # a convolution: cuDNN's TF32 tensor cores are 3x above the fp32 roof
    conv = slowdown_reason(_profile(29.65, 4.0, 3.65, 12.12, "compute-bound"))
    assert conv.startswith("compute-bound: candidate 29.650 ms = 41%; eager 4.000 ms = 303%")
    assert "tensor cores" in conv
    # a copy at the bandwidth roof: nothing left to gain
    copy = slowdown_reason(_profile(3.16, 3.05, 3.04, 3.03, "memory-bound"))
    assert "bandwidth roof" in copy and "no headroom" in copy
    # a GEMM whose baseline reaches the roof and the candidate does not
    gemm = slowdown_reason(_profile(5.69, 2.69, 2.69, 2.79, "compute-bound"))
    assert "the baseline reaches the roof, the candidate does not" in gemm
    assert "no headroom" not in gemm
    assert slowdown_reason({"status": "error"}) is None and slowdown_reason(None) is None


def test_report_says_what_limits_each_slower_problem():
    settings = {"mode": "sample", "samples": 1, "per_problem": 1, "ks": [1], "backend": "compiler",
                "temperature": 1.0, "top_p": 0.97, "protocol": "ours", "trials": 5,
                "tolerance_preset": "default", "policy": "strict"}  # fmt: skip
    why = "compute-bound: candidate 7.832 ms = 10%; eager 1.847 ms = 42% of the fp32 roof"
    problems = [
        ("conv", [rec("conv", 0, True, 0.24, 0.24, status="slower", limit=why)], None, None),
        ("relu", [rec("relu", 0, True, 1.0, 1.01, limit="memory-bound: at the roof")], None, None),
        ("bad", [rec("bad", 0, False)], None, None),
    ]
    r = compute_report(settings, problems)
    assert r["problems"][0]["limit"] == why
    from agent.bench.report import render_markdown

    md = render_markdown(r)
    section = md[md.index("## Slower than the better") :]
    assert f"| conv | 0.24x | {why} |" in section
    assert "| relu |" not in section and "| bad |" not in section  # 1.0x: not below 0.97x
    assert "not tuned" in section


def test_eager_at_full_fp32_is_evidence_beside_the_bar():
    """Where eager ran cuDNN in TF32, eager with TF32 off is timed too (tools.job.profile_worker):
    it shows in the limit text, the per-problem table and its own geomean, and never moves the
    bar (the better of eager and compile at PyTorch's defaults)."""
    from agent.bench.report import render_markdown
    from tools.checks.roofline import slowdown_reason
    from tools.orchestrate.evaluate import speedups_of

    prof = _profile(29.65, 4.0, 3.65, 12.12, "compute-bound")
    prof["eager_fp32"] = {"median_ms": 14.0}
    conv = slowdown_reason(prof)
    assert "eager at full fp32 (TF32 off, the precision the candidate meets) 14.000 ms" in conv
    assert "the candidate is 0.47x of it" in conv
    assert "eager at full fp32" not in slowdown_reason(
        _profile(29.65, 4.0, 3.65, 12.12, "compute-bound")
    )

    sp = speedups_of(
        {"speedup_eager": {"value": 0.13}, "speedup_compile": {"value": 0.12},
         "speedup_eager_fp32": {"value": 0.47}}
    )  # fmt: skip
    assert sp == {"eager": 0.13, "compile": 0.12, "best": 0.12, "eager_fp32": 0.47}

    settings = {"mode": "sample", "samples": 1, "per_problem": 1, "ks": [1], "backend": "compiler",
                "temperature": 1.0, "top_p": 0.97, "protocol": "ours", "trials": 5,
                "tolerance_preset": "default", "policy": "strict"}  # fmt: skip
    conv_rec = rec("conv", 0, True, 0.13, 0.12, status="slower", limit=conv)
    conv_rec.speedups.update(best=0.12, eager_fp32=0.47)
    problems = [
        ("conv", [conv_rec], None, None),
        ("gemm", [rec("gemm", 0, True, 1.6, 1.5)], None, None),
    ]
    r = compute_report(settings, problems)
    g = r["metrics"]["geomean_speedup"]
    assert g["best"]["value"] == pytest.approx(math.sqrt(0.12 * 1.5))  # the bar: unchanged
    assert g["eager_fp32"] == {"value": pytest.approx(0.47), "problems": 1}
    md = render_markdown(r)
    assert "| conv | 1 | 1 | 100.0% | 0.13x | 0.12x | 0.12x | 0.47x |" in md
    assert "| gemm | 1 | 1 | 100.0% | 1.60x | 1.50x | 1.50x | - |" in md
    assert "geometric mean over it 0.47x (1 problems)" in md


def test_tf32_in_eager_sees_convolutions_only_while_tf32_is_on():
    import torch

    from tools.checks.precision import full_fp32
    from tools.job.profile_worker import tf32_in_eager

    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    assert tf32_in_eager(conv) == torch.backends.cudnn.allow_tf32
    assert not tf32_in_eager(torch.nn.Linear(3, 4))
    with full_fp32():
        assert not tf32_in_eager(conv)


def test_report_names_the_precision_of_each_problems_kernel():
    """The per-problem table names the tl.dot precision of the fastest correct candidate's
    GEMM template and convolution calls (issue 15: the report always names it), read from the
    candidate's code by `code_precision`."""
    from agent.bench.records import code_precision
    from agent.bench.report import render_markdown
    from tools.kernels.gemm_template import GEMM_SOURCE, call_for

    conv_code = (
        "y = triton_convolution(x, w, b, [1], [0], [1], False, [0], 1, precision='bf16x3')\n"
    )
    gemm_code = GEMM_SOURCE + "\nout = " + call_for("mm", ["a", "b"], {}) + "\n"
    assert code_precision(conv_code) == "bf16x3"
    assert code_precision(gemm_code) == "tf32x3"
    assert code_precision(conv_code + gemm_code) == "bf16x3, tf32x3"
    assert code_precision("def broken(:\n") == "" and code_precision(None) == ""
    assert code_precision("x = 1\n") == ""

    settings = {"mode": "sample", "samples": 2, "per_problem": 2, "ks": [1], "backend": "compiler",
                "temperature": 1.0, "top_p": 0.97, "protocol": "ours", "trials": 5,
                "tolerance_preset": "default", "policy": "strict"}  # fmt: skip
    problems = [
        ("conv", [rec("conv", 0, True, 0.5, 0.4, status="slower", precision="tf32x3"),
                  rec("conv", 1, True, 0.7, 0.6, status="slower", precision="bf16x3")], None, None),
        ("relu", [rec("relu", 0, True, 1.0, 1.01), rec("relu", 1, False)], None, None),
    ]  # fmt: skip
    r = compute_report(settings, problems)
    assert [p["precision"] for p in r["problems"]] == ["bf16x3", ""]  # the faster conv candidate
    md = render_markdown(r)
    assert "| precision |" in md
    conv_row = next(line for line in md.splitlines() if line.startswith("| conv |"))
    relu_row = next(line for line in md.splitlines() if line.startswith("| relu |"))
    assert "| bf16x3 |" in conv_row and "| - |" in relu_row
    # a record written before the field reads as no precision
    old = SampleRecord.from_dict(
        {k: v for k, v in rec("a", 0, True).to_dict().items() if k != "precision"}
    )
    assert old.precision == ""


def test_merged_benches_take_each_problems_newest_verdict(tmp_path):
    """benchmarks/merge_benches.py: a newer partial run replaces the problems it has a verdict
    for, keeps the base's others (a problem the newer run only started included), names each
    verdict's source, and the rebuilt report reads the merged verdicts."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "merge_benches", ROOT / "benchmarks" / "merge_benches.py"
    )
    mb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mb)

    def ok(eager):
        record = {"status": "ok", "correct": True, "speedups": {"eager": eager, "compile": eager}}
        return (record, {"status": "ok"}, None)

    base = fabricate_bench(tmp_path / "old" / "level1", {"a": ok(0.5), "b": ok(0.8), "c": ok(1.2)})
    newer = fabricate_bench(tmp_path / "new" / "level1", {"a": ok(2.0), "b": None})
    out = tmp_path / "merged" / "level1"
    rc = mb.main([str(out), str(base), str(newer), "--label", f"{base}=s8", f"{newer}=s9"])
    assert rc == 0
    assert json.loads((out / "source.json").read_text()) == {"a": "s9", "b": "s8", "c": "s8"}
    report = json.loads((out / "report.json").read_text())
    best = {p["problem"]: p["best_speedup"]["eager"] for p in report["problems"]}
    assert best == {"a": 2.0, "b": 0.8, "c": 1.2}
    assert mb.main([str(out), str(tmp_path / "nowhere"), str(newer)]) == 2
    # OUT as one of its inputs (or inside one) would delete what it merges: refused, untouched
    assert mb.main([str(base), str(base), str(newer)]) == 2
    assert mb.main([str(newer / "merged"), str(base), str(newer)]) == 2
    assert (base / "a" / "00" / "sample.json").exists() and not (newer / "merged").exists()
    assert not out.with_name("level1.merging").exists()  # built aside, then renamed


def test_a_report_with_nothing_evaluated_does_not_say_cpu():
    """A GPU bench stopped before its first candidate finished (session 12, level2/92 alone) said
    "on the CPU speedups are unavailable": the device is read from the records, and there were
    none."""
    from agent.bench.report import compute_report

    settings = {"mode": "sample", "samples": 1, "ks": [1]}
    notes = compute_report(settings, [("92_x", [], None, None)])["notes"]
    assert any("no candidate was evaluated" in n for n in notes), notes
    assert not any("on the CPU" in n for n in notes), notes
