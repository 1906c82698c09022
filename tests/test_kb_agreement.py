"""Issue 36: does KernelBench's own judge agree with ours?

- The KernelBench export says, per kernel, whether KernelBench's judge would accept it and why
  not (`agent.kernelbench_accept`): its static checker run on the exported source, and its
  tolerance against the error our verification measured against the reference as KernelBench
  runs it (only a `pytorch-default` verdict on a GPU measured that).
- `benchmarks/kb_judge_agreement.py` sets KernelBench's judge's answers beside ours, kernel by
  kernel: here with a stand-in judge (a script printing the JSON line `kb_judge.py` prints), so
  the agreement logic is checked on the CPU.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import agent.kernelbench_io as kb
from agent.kernelbench_accept import (
    DEFAULT_EVAL_DIR,
    KB_TOLERANCE,
    acceptance,
    checker_path,
    load_static_checker,
)
from tests.helpers import EX, ROOT
from tools.core.errors import BadInputError

sys.path.insert(0, str(ROOT / "benchmarks"))
import kb_judge_agreement as agreement  # noqa: E402

HAS_CHECKER = checker_path() is not None
needs_checker = pytest.mark.skipif(
    not HAS_CHECKER, reason=f"KernelBench's checker not under {DEFAULT_EVAL_DIR}"
)
GOOD = (EX / "kernels" / "relu.py").read_text()
WITH_PASS = GOOD.replace(
    "class ModelNew(nn.Module):", 'class ModelNew(nn.Module):\n    """We pass."""\n', 1
)
TOL = KB_TOLERANCE["fp32"]


def _verdict(status="ok", *, device="cuda", numerics="pytorch-default", ratio=None):
    evidence = {} if ratio is None else {"reference_error": {"ratio": ratio, "runs": 12}}
    return {
        "status": status,
        "correct": status == "ok",
        "device": device,
        "reference_numerics": numerics,
        "evidence": evidence,
        "trials": 5,
        "message": status,
    }


SAMPLES = {
    # name: (kernel source or None, verdict, KernelBench's judge's answer to it)
    "within": (GOOD, _verdict(ratio=TOL / 4), {"static_valid": True, "compiled": True, "correct": True}),
    "outside": (GOOD, _verdict(ratio=TOL * 5), {"static_valid": True, "compiled": True, "correct": False}),
    "exact": (GOOD, _verdict(numerics="exact", ratio=TOL / 4), {"static_valid": True, "compiled": True, "correct": False}),
    "cpu": (GOOD, _verdict(device="cpu", ratio=TOL / 4), {"static_valid": True, "compiled": True, "correct": True}),
    "pass": (WITH_PASS, _verdict(ratio=TOL / 4), {"static_valid": False, "static_errors": ["Contains 'pass' statement (inheritance bypass)"]}),
    "mismatch": (GOOD, _verdict("mismatch"), {"static_valid": True, "compiled": True, "correct": False}),
    "no_code": (None, _verdict("bad_input"), {"error": "no kernel"}),
}  # fmt: skip
"""Sample i of problem 19 is the i-th of these."""


def _bench(tmp_path: Path) -> Path:
    """A finished bench directory of one KernelBench problem, a sample per case of SAMPLES."""
    out = tmp_path / "bench"
    out.mkdir(parents=True)
    (out / "bench.json").write_text(
        json.dumps({"problems_path": "KernelBench/level1", "problems": ["19_ReLU"]})
    )
    for i, (source, verdict, _) in enumerate(SAMPLES.values()):
        sd = out / "19_ReLU" / f"{i:02d}"
        sd.mkdir(parents=True)
        if source is not None:
            (sd / "kernel.py").write_text(source)
        record = {"status": verdict["status"], "correct": verdict["correct"], "compiled": True}
        (sd / "sample.json").write_text(json.dumps({**record, "device": verdict["device"]}))
        (sd / "verdict.json").write_text(json.dumps(verdict))
    return out


def _exported(tmp_path: Path, **kw) -> tuple[kb.Export, dict[str, dict]]:
    done = kb.export_run(_bench(tmp_path), tmp_path / "run", **kw)
    entries = json.loads((tmp_path / "run" / kb.RESULTS_NAME).read_text())["19"]
    names = list(SAMPLES)
    return done, {
        names[e["sample_id"]]: e["metadata"]["triton_agent_kernelbench_judge"] for e in entries
    }


@needs_checker
def test_the_export_says_whether_kernelbench_would_accept_each_kernel(tmp_path):
    done, judged = _exported(tmp_path)
    answers = {name: j["would_accept"] for name, j in judged.items()}
    assert answers == {
        "within": "yes",
        "outside": "no",
        "exact": "unknown",
        "cpu": "unknown",
        "pass": "no",
        "mismatch": "no",
        "no_code": "no",
    }
    assert done.acceptance == {"yes": 1, "no": 4, "unknown": 2}
    assert done.checker is not None
    assert judged["within"]["why_not"] == []
    assert judged["within"]["correctness"]["measured"] == TOL / 4
    assert "exceeds its tolerance" in judged["outside"]["why_not"][0]
    assert "not measured" in judged["exact"]["why_not"][0]
    assert "pytorch-default" in judged["exact"]["why_not"][0]
    assert "on the CPU" in judged["cpu"]["why_not"][0]
    assert judged["cpu"]["correctness"]["measured"] is None
    assert judged["pass"]["static"]["valid"] is False
    assert "'pass'" in judged["pass"]["why_not"][0]
    table = (tmp_path / "run" / kb.ACCEPTANCE_NAME).read_text()
    assert table.count("| level_1_problem_19_sample_") == len(SAMPLES)
    assert "no code in the generation" in table
    assert "not measured" in table


def test_without_the_checker_the_static_part_is_not_run(tmp_path, monkeypatch):
    import agent.kernelbench_accept as accept

    monkeypatch.setattr(accept, "DEFAULT_EVAL_DIR", tmp_path / "nowhere")
    done, judged = _exported(tmp_path)
    assert done.checker is None
    assert judged["within"]["would_accept"] == "unknown"  # its tolerance met, its checker not run
    assert judged["within"]["static"]["checked"] is False
    assert judged["outside"]["would_accept"] == "no"
    with pytest.raises(BadInputError, match="static checker"):
        kb.export_run(_bench(tmp_path / "again"), tmp_path / "run2", checker=tmp_path / "nowhere")


@needs_checker
def test_a_checker_given_as_a_folder_is_found():
    assert checker_path(DEFAULT_EVAL_DIR) == checker_path()
    assert load_static_checker(DEFAULT_EVAL_DIR) is load_static_checker()


def test_the_tolerances_are_kernelbenchs():
    """KB_TOLERANCE is `get_tolerance_for_precision` of KernelBench's eval.py, where present."""
    source = DEFAULT_EVAL_DIR / "kernelbench" / "eval.py"
    if not source.is_file():
        pytest.skip(f"KernelBench's eval.py not at {source}")
    text = source.read_text()
    table = text.split("PRECISION_TOLERANCES = {", 1)[1].split("}", 1)[0]
    found = dict(re.findall(r"torch\.(float32|float16|bfloat16):\s*([0-9.e-]+)", table))
    names = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
    assert {names[k]: float(v) for k, v in found.items()} == KB_TOLERANCE


def test_a_non_finite_error_read_back_from_json_is_outside_the_tolerance():
    judged = acceptance(GOOD, _verdict(ratio="inf"), None)
    assert judged["correctness"]["accept"] is False
    assert judged["would_accept"] == "no"


def test_a_verdict_kernelbench_does_not_judge_is_unknown():
    for status in ("cheat", "policy", "resource"):
        judged = acceptance(GOOD, _verdict(status), None)
        assert judged["would_accept"] == "unknown", status
        assert judged["correctness"]["accept"] is None


# ---------------------------------------------------------------------------------------------
# benchmarks/kb_judge_agreement.py with a stand-in for KernelBench's judge

STAND_IN = """
import json, sys
answers = json.load(open(ANSWERS))
problem, kernel = sys.argv[1], sys.argv[2]
static_only = "--static-only" in sys.argv
source = open(kernel).read()
answer = answers[source.split("# case: ", 1)[1].split()[0]]
if "error" in answer:
    sys.exit("the judge crashed")
if static_only:
    answer = {k: v for k, v in answer.items() if k.startswith("static")}
print("some log line")
print(json.dumps(answer))
"""


def _stand_in_judge(tmp_path: Path) -> Path:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({name: a for name, (_, _, a) in SAMPLES.items()}))
    judge = tmp_path / "kb_judge.py"
    judge.write_text(f"ANSWERS = {str(answers)!r}\n" + STAND_IN)
    return judge


def _tagged_bench(tmp_path: Path) -> Path:
    """The bench of `_bench` with each kernel tagged by its case (the stand-in reads it)."""
    out = _bench(tmp_path)
    for i, name in enumerate(SAMPLES):
        kernel = out / "19_ReLU" / f"{i:02d}" / "kernel.py"
        if kernel.exists():
            kernel.write_text(kernel.read_text() + f"\n# case: {name}\n")
    return out


def _problems(tmp_path: Path) -> Path:
    level = tmp_path / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "19_ReLU.py").write_text((EX / "problems" / "relu.py").read_text())
    return tmp_path / "KernelBench"


def test_agreement_kernel_by_kernel_with_a_stand_in_judge(tmp_path, capsys):
    kb.export_run(_tagged_bench(tmp_path), tmp_path / "run")
    out = tmp_path / "out"
    argv = [
        "--run", f"pytorch-default={tmp_path / 'run'}",
        "--problems", str(_problems(tmp_path)),
        "--judge", str(_stand_in_judge(tmp_path)),
        "--out", str(out),
    ]  # fmt: skip
    assert agreement.main(argv) == 0
    record = json.loads((out / "kb_agreement.json").read_text())
    rows = {r["kernel"]: r for r in record["kernels"]}
    names = list(SAMPLES)
    by_case = {names[int(k.split("_sample_")[1].split("_")[0])]: r for k, r in rows.items()}
    assert set(by_case) == set(SAMPLES) - {"no_code"}
    for name, row in by_case.items():
        _, verdict, answer = SAMPLES[name]
        kb_accepts = bool(answer.get("static_valid")) and bool(answer.get("correct"))
        assert row["kb_accepts"] is kb_accepts, name
        assert row["ours_correct"] is verdict["correct"], name
        assert row["agree"] is (verdict["correct"] == kb_accepts), name
    # where the export predicted yes or no, the stand-in's answers bear it out
    assert all(r["predicted_right"] for r in rows.values() if r["predicted"] in ("yes", "no"))
    # the exact-reference kernel: ours ok, KernelBench's refused: a disagreement, reported
    assert by_case["exact"]["agree"] is False and by_case["exact"]["predicted"] == "unknown"
    s = record["summary"]["pytorch-default"]
    assert s["kernels"] == len(by_case)
    assert s["compared"] == len(by_case)
    assert s["agree"] == sum(r["agree"] for r in by_case.values())
    assert s["ours_correct"] == sum(bool(SAMPLES[n][1]["correct"]) for n in by_case)
    text = (out / "kb_agreement.md").read_text()
    assert "| pytorch-default | level_1_problem_19_sample_0_kernel.py |" in text
    assert text in capsys.readouterr().out


def test_a_judge_without_an_answer_is_reported_and_fails_the_run(tmp_path):
    bench = _tagged_bench(tmp_path)
    kb.export_run(bench, tmp_path / "run")
    answers = {name: {"error": "x"} for name in SAMPLES}
    judge = _stand_in_judge(tmp_path)
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    argv = [
        "--run", str(tmp_path / "run"), "--problems", str(_problems(tmp_path)),
        "--judge", str(judge), "--out", str(tmp_path / "out"), "--static-only",
    ]  # fmt: skip
    assert agreement.main(argv) == 1
    rows = json.loads((tmp_path / "out" / "kb_agreement.json").read_text())["kernels"]
    assert rows and all(r["kb_error"] and r["agree"] is None for r in rows)


def test_one_kernel_under_two_settings_is_judged_once(tmp_path):
    kb.export_run(_tagged_bench(tmp_path), tmp_path / "a")
    kb.export_run(_tagged_bench(tmp_path / "again"), tmp_path / "b")
    calls = tmp_path / "calls"
    judge = _stand_in_judge(tmp_path)
    judge.write_text(judge.read_text() + f"open({str(calls)!r}, 'a').write('x')\n")
    argv = [
        "--run", f"exact={tmp_path / 'a'}", "--run", f"pytorch-default={tmp_path / 'b'}",
        "--problems", str(_problems(tmp_path)), "--judge", str(judge), "--out", str(tmp_path / "o"),
    ]  # fmt: skip
    agreement.main(argv)
    assert len(calls.read_text()) == len(SAMPLES) - 1
    rows = json.loads((tmp_path / "o" / "kb_agreement.json").read_text())["kernels"]
    assert {r["setting"] for r in rows} == {"exact", "pytorch-default"}
