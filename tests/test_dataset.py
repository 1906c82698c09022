"""`python -m agent dataset build|stats`: only re-verified kernels enter, duplicates are dropped,
a rerun resumes. Everything on the CPU (Triton interpreter), driven through the CLI in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.cli import main
from agent.dataset import (
    SCHEMA_VERSION,
    PairRecord,
    classify_op,
    ledger_path,
    module_to_problem,
    normalize_code,
    pair_key,
    read_jsonl,
    read_pairs,
)
from tests.helpers import EX, FAST_CLI, fenced, last_json, write_replies
from tools.core.problem import problem_from_source
from tools.orchestrate.verify_options import SCALE_TRIALS

PROBLEMS = EX / "problems"
GOOD = (EX / "kernels" / "relu.py").read_text()
KERNELBOOK_COLUMNS = {
    "entry_point",
    "python_code",
    "triton_code",
    "repo_name",
    "module_name",
    "license",
    "synthetic",
    "original_triton_code",
}
OURS = {
    "key",
    "source",
    "verdict",
    "trials",
    "atol",
    "rtol",
    "policy",
    "mixed",
    "device",
    "speedup",
    "speedup_compile",
    "timed_on",
    "provenance",
    "versions",
    "schema_version",
}


def build(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["dataset", "build", *argv, "--json", *FAST_CLI])
    return rc, last_json(capsys)


def optimize(tmp_path: Path, runs: Path, run_id: str, replies: list[str]) -> None:
    rfile = write_replies(tmp_path / f"{run_id}.jsonl", replies)
    rc = main(
        [
            "optimize",
            str(PROBLEMS / "relu.py"),
            "--replies",
            rfile,
            "--no-compiler-seed",
            "--budget",
            str(len(replies)),
            "--runs-dir",
            str(runs),
            "--run-id",
            run_id,
            *FAST_CLI,
        ]
    )
    assert rc == 0


def test_kernels_folder_only_verified_unique_pairs_and_resume(tmp_path, capsys):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    for name in ("relu", "softmax"):
        shutil.copy(EX / "kernels" / f"{name}.py", kernels / f"{name}.py")
    # the same ReLU, reformatted: comments, blank lines and a docstring differ -> a duplicate
    (kernels / "relu_copy.py").write_text(
        "# a copy\n\n" + GOOD.replace('"""ReLU', '"""A ReLU').replace("\n\n", "\n")
    )
    for name in ("relu__mismatch", "matmul__policy"):  # wrong values; torch.mm with a Triton alibi
        shutil.copy(EX / "broken" / f"{name}.py", kernels / f"{name}.py")
    out = tmp_path / "pairs.jsonl"

    rc, res = build(
        capsys, str(kernels), "--problems", str(PROBLEMS), "--out", str(out), "--license", "MIT"
    )
    assert rc == 0
    assert (res["admitted"], res["duplicates"]) == (2, 1)
    assert res["rejected"] == {"mismatch": 1, "policy": 1}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert set(r) == KERNELBOOK_COLUMNS | OURS
        assert r["verdict"] == "ok" and r["source"] == "given" and r["license"] == "MIT"
        assert r["entry_point"] == "Model" and "class Model" in r["python_code"]
        assert "class ModelNew" in r["triton_code"] and r["atol"] == 1e-4
        assert r["trials"] == 2 + len(SCALE_TRIALS)  # --trials 2 and the scale trial(s)
        assert (
            r["device"] == "cpu" and r["speedup"] is None and r["schema_version"] == SCHEMA_VERSION
        )
        assert r["key"] == pair_key(r["python_code"], r["triton_code"])
    assert sorted(r["module_name"] for r in records) == ["relu", "softmax"]
    assert not any(
        "mismatch" in r["provenance"]["path"] or "policy" in r["provenance"]["path"]
        for r in records
    )
    ledger = {Path(e["origin"]).name: e["status"] for e in read_jsonl(ledger_path(out))}
    assert ledger["relu__mismatch.py"] == "mismatch" and ledger["matmul__policy.py"] == "policy"

    # a torn last line (a killed build) is cut off; everything done is skipped, nothing re-verified
    with out.open("a") as f:
        f.write('{"entry_point": "Mod')
    rc, res = build(capsys, str(kernels), "--problems", str(PROBLEMS), "--out", str(out))
    assert rc == 0 and res["resumed"] == 5 and res["admitted"] == 0 and res["rejected"] == {}
    assert len(read_pairs(out)) == 2 and out.read_text().endswith("}\n")

    rc = main(["dataset", "stats", str(out), "--json", "--plot", str(tmp_path / "stats.png")])
    counts = last_json(capsys)
    assert rc == 0 and counts["records"] == 2 and counts["by_source"] == {"given": 2}
    assert counts["by_op_family"] == {"elementwise": 1, "softmax": 1}
    assert counts["by_status"] == {"ok": 2, "duplicate": 1, "mismatch": 1, "policy": 1}
    import matplotlib  # noqa: F401  (in the test extra: a broken install fails, not skips)

    assert (tmp_path / "stats.png").stat().st_size > 0


def test_runs_are_reverified_tampered_verdicts_rejected_duplicates_dropped(tmp_path, capsys):
    runs = tmp_path / "runs"
    mismatch = (EX / "broken" / "relu__mismatch.py").read_text()
    optimize(tmp_path, runs, "first", [fenced(mismatch), fenced(GOOD)])
    optimize(tmp_path, runs, "second", [fenced(GOOD)])  # the same correct kernel again
    # a copy of the first run whose verdict.json claims the broken attempt is ok
    shutil.copytree(runs / "first", runs / "tampered")
    verdict = runs / "tampered" / "attempts" / "00" / "verdict.json"
    claimed = json.loads(verdict.read_text())
    assert claimed["status"] == "mismatch"
    verdict.write_text(json.dumps({**claimed, "status": "ok", "correct": True}))
    capsys.readouterr()

    out = tmp_path / "pairs.jsonl"
    rc, res = build(capsys, str(runs), "--out", str(out))
    assert rc == 0
    records = read_pairs(out)
    assert len(records) == 1  # first/01 == second/00 == tampered/01; first/00 is never considered
    r = records[0]
    assert r.source == "llm:replay" and r.provenance["kind"] == "run" and r.verdict == "ok"
    assert normalize_code(r.triton_code) == normalize_code(GOOD)
    assert res["admitted"] == 1 and res["duplicates"] == 2 and res["rejected"] == {"mismatch": 1}
    ledger = {e["origin"]: e["status"] for e in read_jsonl(ledger_path(out))}
    assert ledger["tampered/00"] == "mismatch"  # re-verification overruled the verdict file
    assert "first/00" not in ledger and "second/00" in ledger


def test_plain_module_with_an_input_recipe(tmp_path, capsys):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "leaky.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Leaky(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x)\n"
    )
    (modules / "leaky.json").write_text(json.dumps({"inputs": [[13, 1000]]}))
    source, entry = module_to_problem((modules / "leaky.py").read_text(), modules / "leaky.py")
    assert entry == "Leaky" and "Model = Leaky" in source and "torch.randn((13, 1000)" in source
    problem_from_source(source)  # a KernelBench problem now

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "leaky.py").write_text(GOOD)
    out = tmp_path / "pairs.jsonl"
    rc, res = build(capsys, str(kernels), "--problems", str(modules), "--out", str(out))
    assert rc == 0 and res["admitted"] == 1
    (r,) = read_pairs(out)
    assert r.module_name == "Leaky" and "def get_inputs" in r.python_code


def test_a_module_without_a_recipe_is_skipped_with_the_reason(tmp_path, capsys):
    (tmp_path / "m.py").write_text("import torch.nn as nn\n\nclass M(nn.Module):\n    pass\n")
    rc, res = build(capsys, str(tmp_path), "--out", str(tmp_path / "p.jsonl"))
    assert rc == 1 and res["items"] == 0
    assert "m.json" in res["skipped"][0]


def test_problems_folder_drafted_by_the_compiler(tmp_path, capsys):
    problems = tmp_path / "problems"
    problems.mkdir()
    shutil.copy(PROBLEMS / "relu.py", problems / "relu.py")
    out = tmp_path / "pairs.jsonl"
    rc, res = build(capsys, str(problems), "--out", str(out))
    assert not res.get("retry_later"), (
        "the compiler drafter failed: " + read_jsonl(ledger_path(out))[0]["message"][:300]
    )
    assert rc == 0 and res["admitted"] == 1
    (r,) = read_pairs(out)
    assert (
        r.source == "compiler"
        and r.provenance["kind"] == "problem"
        and "@triton.jit" in r.triton_code
    )


def test_bad_source_is_a_usage_error(tmp_path, capsys):
    assert (
        main(["dataset", "build", str(tmp_path / "missing"), "--out", str(tmp_path / "p.jsonl")])
        == 2
    )
    assert main(["dataset", "stats", str(tmp_path / "missing.jsonl")]) == 2


@pytest.mark.parametrize(
    ("forward", "family"),
    [
        ("return torch.relu(x)", "elementwise"),
        ("return x * 2 + 1", "elementwise"),
        ("return torch.sum(x, dim=1)", "reduction"),
        ("return torch.softmax(x, dim=-1)", "softmax"),
        ("return torch.relu(x)  # unlike a softmax", "elementwise"),  # comments do not count
        ("return torch.nn.functional.layer_norm(x, x.shape[-1:])", "norm"),
        ("return torch.matmul(x, x.T).relu()", "matmul"),
        ("return torch.nn.functional.conv2d(x, self.w)", "conv"),
        ("return torch.nn.functional.mse_loss(x, y)", "loss"),
        ("return torch.mean((x - y) ** 2)", "loss"),
        ("return x.view(-1)", "other"),
    ],
)
def test_classify_op(forward, family):
    code = f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x, y=None):\n        {forward}\n"
    assert classify_op(code) == family


def test_normalisation_ignores_comments_docstrings_and_layout():
    a = 'def f(x):\n    """Doc."""\n    # why\n    return x+1\n'
    b = "def f( x ):\n\n    return x + 1  # same\n"
    assert normalize_code(a) == normalize_code(b)
    assert normalize_code(a) != normalize_code(b.replace("1", "2"))


def test_record_round_trip():
    r = PairRecord(
        entry_point="Model",
        python_code="p",
        triton_code="t",
        repo_name="r",
        module_name="m",
        license="MIT",
        key="k",
        source="compiler",
        verdict="ok",
        trials=5,
        atol=1e-4,
        rtol=1e-4,
    )
    assert PairRecord.from_dict({**r.to_dict(), "future_field": 1}) == r


def test_a_second_build_of_the_same_output_is_refused_while_one_writes(tmp_path):
    """The ledger's lock keeps two builds off one output: the second is refused at once (and the
    first's ledger keeps its lock)."""
    import fcntl
    from types import SimpleNamespace

    from agent.dataset.build import build
    from agent.dataset.records import ledger_path
    from tools.core.errors import BadInputError

    out = tmp_path / "pairs.jsonl"
    verifier = SimpleNamespace(device="cpu", sandbox=SimpleNamespace(slots=1))
    with open(ledger_path(out), "a") as held:  # another build, writing
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BadInputError, match="another `dataset build` is writing"):
            build([], out, verifier=verifier)
    summary = build([], out, verifier=verifier)  # the lock released: this one runs
    assert summary.items == 0 and summary.records_total == 0
