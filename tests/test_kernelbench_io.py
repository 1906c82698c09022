"""KernelBench in and out: level/id selection, `bench --kernelbench ... --export-kernelbench`
against KernelBench's own naming, and the KernelBench timing numbers carried beside ours."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agent import kernelbench_io as kb
from agent.cli import build_parser, main
from tests.helpers import EX, FAST_CLI, fenced, last_json, write_replies
from tools.core.errors import BadInputError

# KernelBench's scripts/eval_from_generations.py: fetch_kernel_from_disk reads
#   os.path.join(run_dir, f"level_{level}_problem_{problem_id}_sample_{sample_id}_kernel.py")
# and add_to_eval_results_file appends, under str(problem_id), these keys:
KB_KERNEL = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
KB_ENTRY_KEYS = {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}


@pytest.fixture
def kb_root(tmp_path: Path) -> Path:
    """A KernelBench checkout in miniature: KernelBench/level1/<id>_<Name>.py."""
    lvl = tmp_path / "KernelBench" / "KernelBench" / "level1"
    lvl.mkdir(parents=True)
    shutil.copy(EX / "problems" / "relu.py", lvl / "19_ReLU.py")
    shutil.copy(EX / "problems" / "softmax.py", lvl / "23_Softmax.py")
    shutil.copy(EX / "problems" / "sum_reduction.py", lvl / "47_Sum_reduction_over_a_dimension.py")
    (lvl / "README.md").write_text("not a problem")
    return tmp_path / "KernelBench"


def test_parse_ids():
    assert kb.parse_ids("1-3,19, 2") == [1, 2, 3, 19]
    assert kb.parse_ids("7") == [7]
    for bad in ("", "a", "3-1", "0", "1-", "1,,x"):
        with pytest.raises(BadInputError):
            kb.parse_ids(bad)


def test_select_problems_by_level_and_ids(kb_root: Path):
    names = [p.name for p in kb.select_problems(kb_root, 1, "19,47")]
    assert names == ["19_ReLU.py", "47_Sum_reduction_over_a_dimension.py"]
    assert len(kb.select_problems(kb_root, 1)) == 3  # the whole level, README left out
    # the level folder itself, and the checkout's inner KernelBench/ folder, work as DIR too
    assert (
        kb.select_problems(kb_root / "KernelBench" / "level1", 1, "23")[0].name == "23_Softmax.py"
    )
    assert kb.select_problems(kb_root / "KernelBench", 1, "23")[0].name == "23_Softmax.py"
    with pytest.raises(BadInputError, match="no problem with id 20"):
        kb.select_problems(kb_root, 1, "19-20")
    with pytest.raises(BadInputError, match="no level 2"):
        kb.select_problems(kb_root, 2)


def test_real_kernelbench_names_have_ids():
    """The problems this project keeps from KernelBench (.kb/, when present) parse."""
    root = Path(__file__).resolve().parent.parent / ".kb"
    if not (root / "level1").is_dir():
        pytest.skip("no KernelBench checkout in .kb/")
    found = kb.level_problems(root, 1)
    assert found and all(kb.problem_id(p) == i for i, p in found.items())
    first = min(found)
    assert kb.select_problems(root, 1, str(first))[0].name.startswith(f"{first}_")


def test_cli_flags_and_their_errors(kb_root: Path, capsys):
    args = build_parser().parse_args(
        ["bench", "--kernelbench", str(kb_root), "--level", "1", "--problems", "1-10,19"]
    )
    assert (args.kernelbench, args.level, args.kb_problems) == (str(kb_root), 1, "1-10,19")
    assert main(["bench", "--kernelbench", str(kb_root), "--problems", "19", "--json"]) == 2
    assert "--level" in last_json(capsys)["message"]
    rc = main(["optimize", "--kernelbench", str(kb_root), "--level", "1", "--problems", "19,23"])
    assert rc == 2
    assert "one problem" in capsys.readouterr().err


def test_bench_kernelbench_level_and_export(kb_root: Path, tmp_path: Path, capsys):
    """A real bench (CPU, scripted replies) of one id of a level, exported in KernelBench's
    layout: file names as fetch_kernel_from_disk builds them, eval_results.json as
    add_to_eval_results_file writes it."""
    good = fenced((EX / "kernels" / "relu.py").read_text())
    replies = write_replies(tmp_path / "r.jsonl", [good, "no code here"])
    out, run_dir = tmp_path / "bench", tmp_path / "runs" / "my_run"
    rc = main(
        [
            "bench",
            "--kernelbench", str(kb_root), "--level", "1", "--problems", "19",
            "--replies", replies, "--samples", "2", "--out", str(out),
            "--export-kernelbench", str(run_dir), "--json", *FAST_CLI, "--timeout", "240",
        ]
    )  # fmt: skip
    report = last_json(capsys)
    assert rc in (0, 1), report
    assert [p["problem"] for p in report["problems"]] == ["19_ReLU"]
    assert report["kernelbench_export"]["level"] == 1

    files = sorted(p.name for p in run_dir.glob("*_kernel.py"))
    assert files, list(run_dir.iterdir())
    for name in files:
        level, pid, sample = map(int, KB_KERNEL.match(name).groups())
        assert (level, pid, sample) == (1, 19, 0)
    # sample 1 of problem 19 had no code: no kernel file, as KernelBench would find none
    assert "level_1_problem_19_sample_0_kernel.py" in files
    assert "level_1_problem_19_sample_1_kernel.py" not in files
    assert "class ModelNew" in (run_dir / "level_1_problem_19_sample_0_kernel.py").read_text()

    results = json.loads((run_dir / kb.RESULTS_NAME).read_text())
    assert not (run_dir / "eval_results.json").exists()  # KernelBench would skip what it lists
    assert set(results) == {"19"}
    for entries in results.values():
        assert [e["sample_id"] for e in entries] == [0, 1]
        for e in entries:
            assert set(e) == KB_ENTRY_KEYS
            assert isinstance(e["metadata"], dict) and isinstance(e["runtime_stats"], dict)
            assert e["runtime"] == -1.0  # CPU: not timed, as KernelBench marks it
    relu = {e["sample_id"]: e for e in results["19"]}
    assert relu[0]["correctness"] is True and relu[0]["compiled"] is True
    assert relu[1]["correctness"] is False and "other_error" in relu[1]["metadata"]

    # --rebuild with --export-kernelbench exports the same run again (level from the folder)
    again = tmp_path / "again"
    assert main(["bench", "--rebuild", str(out), "--export-kernelbench", str(again)]) in (0, 1)
    assert json.loads((again / kb.RESULTS_NAME).read_text()) == results


def test_export_uses_kernelbench_timing_when_there(tmp_path: Path):
    """A GPU sample of the kernelbench protocol: runtime is KernelBench's mean (rounded as its
    get_timing_stats does) and the eager numbers land in baseline_time_torch.json."""
    out = tmp_path / "bench"
    sd = out / "19_ReLU" / "00"
    sd.mkdir(parents=True)
    (out / "bench.json").write_text(
        json.dumps({"problems_path": "/x/KernelBench/level1", "problems": ["19_ReLU"]})
    )
    (sd / "kernel.py").write_text("class ModelNew: ...\n")
    (sd / "sample.json").write_text(
        json.dumps({"status": "ok", "correct": True, "compiled": True, "device": "cuda"})
    )
    (sd / "verdict.json").write_text(json.dumps({"status": "ok", "trials": 5, "message": ""}))
    stats = {"mean": 0.123456, "std": 0.01, "min": 0.1, "max": 0.2, "num_trials": 100}
    (sd / "profile.json").write_text(
        json.dumps(
            {
                "device": "NVIDIA H200",
                "candidate": {"median_ms": 0.1, "n": 200},
                "kernelbench": {"eager": dict(stats, mean=0.2), "candidate": stats, "speedup": 1.6},
            }
        )
    )
    done = kb.export_run(out, tmp_path / "run")
    assert done.level == 1 and done.kernels == 1
    entry = json.loads((tmp_path / "run" / kb.RESULTS_NAME).read_text())["19"][0]
    assert entry["runtime"] == 0.123
    assert entry["runtime_stats"]["num_trials"] == 100
    assert entry["runtime_stats"]["hardware"] == "NVIDIA H200"
    assert entry["metadata"]["correctness_trials"] == "(5 / 5)"
    base = json.loads((tmp_path / "run" / "baseline_time_torch.json").read_text())
    assert base["level1"]["19_ReLU.py"]["mean"] == 0.2
    with pytest.raises(BadInputError, match="--level"):
        (out / "bench.json").write_text(json.dumps({"problems_path": "/x/probs"}))
        kb.export_run(out, tmp_path / "run2")


def test_failed_sample_metadata_names_kernelbench_keys():
    e = kb.eval_entry(
        1,
        {"status": "mismatch", "correct": False, "compiled": True, "device": "cpu"},
        {"status": "mismatch", "trials": 1, "message": "output 0: 12 of 64 elements wrong"},
        {},
    )
    assert e["metadata"]["correctness_issue"].startswith("output 0")
    assert e["metadata"]["correctness_trials"] == "(0 / 1)" and e["runtime"] == -1.0
    e = kb.eval_entry(0, {"status": "compile_error", "correct": False}, {"message": "bad"}, {})
    assert e["metadata"]["compilation_error"] == "bad" and e["compiled"] is False


def test_kernelbench_timing_summary_and_trace_kept_out_of_json():
    from tools.orchestrate.profile import kernelbench_summary
    from tools.orchestrate.profile_result import ProfileResult

    s = kernelbench_summary(
        {"eager": {"mean": 2.0, "std": 0.1}, "candidate": {"mean": 0.5, "std": 0.05}}
    )
    assert s["speedup"] == 4.0 and "CUDA events" in s["method"]
    assert kernelbench_summary(None) is None and kernelbench_summary({"eager": "x"}) is None
    r = ProfileResult(status="ok", message="", problem="p", kernel="k", baseline="eager")
    r.trace = '{"traceEvents": []}'
    assert "trace" not in r.to_dict()
