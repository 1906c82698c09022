"""Issue 17, the remaining parts: one exit-code rule (0 ok, 1 failed, 2 bad input), short
usage errors, `--debug` after the command, tables that do not cut words off a terminal, a
`repair` hint that is true, a REPL that takes the plain nn.Module its help promises, `dataset
stats` refusing a non-JSON file, no empty MCP progress message, a backend that cannot be
reached failing once and leaving no run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli import build_parser, main
from tests.helpers import EX

RELU = str(EX / "problems" / "relu.py")
QUICK = ["--trials", "1", "--target", "none", "--timeout", "60"]


@pytest.fixture(autouse=True)
def _no_server(monkeypatch):
    for var in ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL", "TRITON_AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)


def test_debug_is_accepted_before_and_after_the_command():
    parser = build_parser()
    assert parser.parse_args(["verify", "p.py", "k.py", "--debug"]).debug is True
    assert parser.parse_args(["--debug", "verify", "p.py", "k.py"]).debug is True
    assert parser.parse_args(["verify", "p.py", "k.py"]).debug is False


def test_usage_errors_are_short(capsys):
    assert main(["optimize", RELU, "--budget"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) <= 3, err  # was the 22-line usage of every flag
    assert "--budget" in err[-1] and "expected one argument" in err[-1]


def test_tables_do_not_cut_words_when_not_a_terminal(capsys):
    from agent.cli.optimize import print_table

    summary = "mismatch: output 0 (trial 1, first run): 4096 of 4096 elements outside atol"
    attempt = {"index": 0, "round": 1, "source": "llm:replay", "status": "mismatch",
               "speedup": None, "summary": summary}  # fmt: skip
    result = {"run_id": "r", "run_dir": "runs/r", "attempts": [attempt], "correct": False}
    print_table(result)
    err = capsys.readouterr().err
    assert summary in err
    # its natural width: no column padded out to fill a forced 160-column table
    assert "┃ # ┃" in err and max(len(line) for line in err.splitlines()) < 160


def test_a_long_summary_is_cut_at_a_word_not_inside_one(capsys):
    from agent.cli.optimize import print_table

    summary = ("resource: the candidate failed: too slow for the Triton interpreter: "
               "triton_per_fused_native_layer_norm_0's grid (32768, 1, 1) is 32,768 programs")  # fmt: skip
    attempt = {"index": 0, "round": 1, "source": "compiler", "status": "resource",
               "speedup": None, "summary": summary}  # fmt: skip
    print_table({"run_id": "r", "run_dir": "runs/r", "attempts": [attempt], "correct": False})
    row = next(ln for ln in capsys.readouterr().err.splitlines() if "resource:" in ln)
    shown = row.split("│")[-2].strip()
    # was "...interpreter: triton_per_fused_nati"
    assert shown.endswith("...") and summary.startswith(shown[:-3])
    assert not summary[len(shown) - 3].isalnum()  # cut where a word ends


@pytest.mark.parametrize("text", ["", "import torch\n\nclass Net:\n    pass\n"])
def test_a_kernel_without_model_new_is_bad_input_exit_2(tmp_path, capsys, text):
    kernel = tmp_path / "k.py"
    kernel.write_text(text)
    assert main(["verify", RELU, str(kernel), *QUICK]) == 2


def test_dataset_stats_of_a_file_that_is_not_json_is_bad_input(tmp_path, capsys):
    junk = tmp_path / "pairs.jsonl"
    junk.write_text("this is not JSON\n")
    assert main(["dataset", "stats", str(junk)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_repair_without_a_model_says_what_repair_needs(tmp_path, capsys):
    broken = str(EX / "broken" / "relu__crash.py")
    rc = main(["repair", RELU, broken, "--runs-dir", str(tmp_path), *QUICK])
    err = capsys.readouterr().err
    assert rc == 2
    assert "repair needs an LLM backend" in err and "enable the compiler" not in err
    assert not any(tmp_path.iterdir())


def test_the_repl_takes_a_plain_module_with_get_inputs(tmp_path):
    from agent.repl import as_problem
    from tools.core.problem import read_problem

    text = (
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super(Net, self).__init__()  # Net\n\n"
        "    def forward(self, x):\n        return torch.relu(x)\n\n\n"
        "def get_inputs():\n    return [torch.randn(64)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    source, note = as_problem(text)
    assert source is not None and "Net" in note
    path = tmp_path / "net.py"
    path.write_text(source)
    assert read_problem(str(path)).source == source  # was "no top-level `class Model`"
    # the compiler drafter reads Model's own forward: was "Model has no `forward` method"
    from tools.draft.loading import forward_signature, load_problem

    assert forward_signature(load_problem(source, "cpu"))[1] == ["x"]
    # renamed, not aliased: the drafter copies the file's other statements (`Net = Model`
    # ended up in its draft without the class, a NameError)
    assert "super(Model, self)" in source and "Net = " not in source and "# Net" in source


def test_repl_help_shows_the_budget_it_uses(capsys):
    assert main(["repl", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "attempt 0, is free) (default 1)" in out


def test_mcp_progress_never_sends_an_empty_message():
    from agent.mcp_server import describe_event

    for event in (
        {"event": "baseline", "baselines": {"available": False, "reason": "no GPU"}},
        {"event": "baseline", "baselines": {"available": True}},
        {"event": "warning"},
        {"event": "error", "message": ""},
    ):
        text = describe_event(event)
        assert text.strip() and not text.rstrip().endswith(":"), (event, text)


def test_resuming_a_finished_run_says_so(capsys):
    from agent.cli.optimize import Progress

    Progress()({"event": "resume", "finished": True, "attempts": 3})
    err = capsys.readouterr().err
    assert "already finished (3 attempts): nothing to do" in err and "resuming" not in err


def test_an_unreachable_server_fails_once_and_leaves_no_run_directory(tmp_path, capsys):
    runs = tmp_path / "runs"
    rc = main(
        ["optimize", RELU, "--base-url", "http://127.0.0.1:9/v1", "--runs-dir", str(runs),
         "--budget", "1", "--no-compiler-seed", *QUICK]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("no usable reply") == 1, err
    assert "every attempt is under" not in err
    assert not runs.exists() or not any(Path(runs).iterdir())


def test_bench_does_not_promise_a_rerun_fixes_a_problem_that_cannot_run():
    from agent.bench import compute_report

    settings = {"mode": "sample", "samples": 1, "per_problem": 1, "ks": [1]}
    report = compute_report(
        settings, [("bad", [], "SyntaxError: invalid syntax", None), ("later", [], None, None)]
    )
    notes = " ".join(report["notes"])
    assert "1 problem(s) could not run: bad" in notes
    assert "1 problem(s) incomplete: later (rerun the same command to resume)" in notes


def test_the_size_guard_does_not_say_zero_flops_for_a_reduction():
    from tools.job.size_guard import too_large_message

    text = too_large_message(300_000_000, 0)
    assert "0 FLOPs" not in text and "not counted" in text
    assert "does 3e+09 FLOPs" in too_large_message(10, 3e9)
