"""Small things a new user notices (issue 38, item 8): `--version` without torch, a `train
--base` that does not exist, and one exit code for a KernelBench problem that cannot run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent.cli import main
from agent.cli.main import asks_for_version
from agent.version import version_line
from tests.helpers import EX, ROOT, fenced, last_json, last_json_line, write_replies

RELU_KERNEL = (EX / "kernels" / "relu.py").read_text()

# Runs an entry point the way `python -m agent --version` (runpy, as -m does) or the
# `triton-agent` console script (`agent.cli:main`) does, then says which heavy packages it loaded.
PROBE = """
import runpy, sys
entry, sys.argv = sys.argv[1], ["triton-agent", *sys.argv[2:]]
try:
    if entry == "module":
        runpy.run_module("agent", run_name="__main__", alter_sys=True)
    else:
        from agent.cli import main
        sys.exit(main())
except SystemExit as e:
    code = e.code
print("exit", code)
print("loaded", " ".join(m for m in ("torch", "triton", "rich", "langgraph") if m in sys.modules))
"""


@pytest.mark.parametrize("entry", ["module", "console-script"])
@pytest.mark.parametrize("flags", [["--version"], ["--debug", "--version"], ["--vers"]])
def test_version_answers_without_importing_torch(entry, flags):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, entry, *flags], capture_output=True, text=True, cwd=ROOT
    )
    lines = out.stdout.splitlines()
    assert lines[0] == version_line(), out.stderr
    assert lines[1] == "exit 0"
    assert lines[2].strip() == "loaded", f"--version imported: {lines[2]}"


def test_what_counts_as_asking_for_the_version():
    assert asks_for_version(["--version"]) and asks_for_version(["--debug", "--vers"])
    assert not asks_for_version(["verify", "--version"])  # the subcommand's error, as before
    assert not asks_for_version(["--help", "--version"])  # argparse prints the help first
    assert not asks_for_version(["--verbose-thing"]) and not asks_for_version([])


def test_help_still_lists_the_version_flag(capsys):
    assert main(["--help"]) == 0
    assert "--version" in capsys.readouterr().out


def test_train_with_a_missing_base_says_the_path_does_not_exist(tmp_path, capsys):
    pytest.importorskip("trl", reason="training needs trl and datasets: pip install -e '.[train]'")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"python_code": "x", "triton_code": "y"}\n')
    missing = tmp_path / "no-such-model"
    rc = main(["train", str(pairs), "--base", str(missing), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"--base {missing}: no such directory" in " ".join(err.split())
    assert "Repo id" not in err


def test_train_with_an_uncached_hub_id_says_it_is_not_downloaded(tmp_path):
    pytest.importorskip("trl", reason="training needs trl and datasets: pip install -e '.[train]'")
    from agent.train import check_base

    with pytest.raises(Exception, match="not download") as info:
        check_base("someone/no-such-model-issue-38")
    assert getattr(info.value, "exit_code", None) == 2
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(Exception, match="no config.json"):
        check_base(str(tmp_path / "not-a-model"))


def kernelbench_level1(root, problems: dict[str, tuple[int, int]]):
    """A KernelBench layout (`root/level1/<id>_<name>.py`) of ReLU problems of the given sizes."""
    level = root / "level1"
    level.mkdir(parents=True)
    source = (EX / "problems" / "relu.py").read_text()
    for name, (batch, dim) in problems.items():
        (level / f"{name}.py").write_text(
            source.replace("BATCH = 13", f"BATCH = {batch}").replace("DIM = 1000", f"DIM = {dim}")
        )
    return root


def test_optimize_and_bench_agree_on_a_kernelbench_problem_too_large_for_the_cpu(tmp_path, capsys):
    """Both exit 2 (bad input): 67M elements is over the interpreter's limit of 16.7M. The bench
    answered 1 for this, optimize 2."""
    kb = kernelbench_level1(tmp_path / "KB", {"1_Big_ReLU": (8192, 8192)})
    replies = write_replies(tmp_path / "replies.jsonl", [fenced(RELU_KERNEL)])
    pick = ["--kernelbench", str(kb), "--level", "1", "--problems", "1", "--replies", replies]

    rc = main(["optimize", *pick, "--runs-dir", str(tmp_path / "runs"), "--json"])
    out = last_json(capsys)
    assert (rc, out["status"]) == (2, "bad_input"), out
    assert "too large for the Triton interpreter" in out["message"]

    rc = main(["bench", *pick, "--samples", "1", "--out", str(tmp_path / "b"), "--json"])
    captured = capsys.readouterr()
    assert rc == 2, captured.err[-2000:]
    assert "bad input:" in captured.err and "too large for the Triton interpreter" in captured.err
    assert last_json_line(captured.out)["problems"][0]["outcome"] == "error"


def test_a_bench_where_some_problem_ran_still_exits_1():
    """Only a bench of which nothing could run is bad input: rows with verdicts, or without an
    error (not reached), keep exit 1 and check nothing again (cfg None would fail if used)."""
    from agent.cli.bench import refused_input

    ran = {"problem": "a", "n": 1, "error": None}
    refused = {"problem": "b", "n": 0, "error": "too large"}
    unreached = {"problem": "c", "n": 0, "error": None}
    for rows in ([ran, refused], [refused, unreached], []):
        assert refused_input({"problems": rows, "out": "/nowhere"}, None) is None
