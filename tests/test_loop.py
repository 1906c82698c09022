"""The refinement loop driven through the CLI in-process with scripted replies (no real LLM)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.cli import main
from agent.config import AgentConfig
from agent.llm.replay import ReplayBackend
from agent.runner import run
from tests.fakes import openai_server as fake_server
from tests.fakes import tiny_llama
from tests.helpers import EX, FAST_CLI, ROOT, fenced, last_json, last_json_line, write_replies

openai_server = fake_server.openai_server
tiny_llama_dir = tiny_llama.tiny_llama_dir

RELU = str(EX / "problems" / "relu.py")
GOOD = (EX / "kernels" / "relu.py").read_text()


def broken(name: str) -> str:
    return (EX / "broken" / name).read_text()


def optimize(tmp_path: Path, capsys, replies: list[str], *extra: str) -> tuple[int, dict]:
    rfile = write_replies(tmp_path / "replies.jsonl", replies)
    rc = main(
        [
            "optimize",
            RELU,
            "--replies",
            rfile,
            "--no-compiler-seed",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *FAST_CLI,
            *extra,
        ]
    )
    return rc, last_json(capsys)


def prompt_of(result: dict, index: int) -> str:
    return (Path(result["run_dir"]) / "attempts" / f"{index:02d}" / "prompt.txt").read_text()


def test_syntax_error_then_fix(tmp_path, capsys):
    rc, res = optimize(
        tmp_path, capsys, [fenced(broken("relu__syntax_error.py")), fenced(GOOD)], "--budget", "4"
    )
    assert rc == 0 and res["status"] == "ok"
    assert [a["status"] for a in res["attempts"]] == ["syntax_error", "ok"]
    second = prompt_of(res, 1)
    assert "SyntaxError" in second and "line 9" in second
    assert "def _relu_kernel" in second  # the previous candidate is shown
    best = Path(res["best_kernel"]).read_text()
    assert "class ModelNew" in best


def test_a_reply_without_code_is_fed_back_not_asked_again(tmp_path, capsys):
    """A model that rambles without a code block gets told so in the next prompt (issue 19:
    a real model's first reply often has no code); before, the first prompt came again."""
    rc, res = optimize(
        tmp_path,
        capsys,
        ["Sure! Triton kernels are a great way to speed up ReLU.", fenced(GOOD)],
        "--budget",
        "4",
    )
    assert rc == 0
    assert [a["status"] for a in res["attempts"]] == ["bad_input", "ok"]
    first, second = prompt_of(res, 0), prompt_of(res, 1)
    assert second != first
    assert "contained no usable code" in second


def test_mismatch_then_fix_feeds_the_evidence_back(tmp_path, capsys):
    rc, res = optimize(
        tmp_path, capsys, [fenced(broken("relu__mismatch.py")), fenced(GOOD)], "--budget", "4"
    )
    assert rc == 0
    assert [a["status"] for a in res["attempts"]] == ["mismatch", "ok"]
    second = prompt_of(res, 1)
    assert "elements outside atol" in second
    assert "NaN" in second and "Hint:" in second


def test_crash_then_fix(tmp_path, capsys):
    rc, res = optimize(
        tmp_path, capsys, [fenced(broken("relu__crash.py")), fenced(GOOD)], "--budget", "3"
    )
    assert rc == 0
    assert [a["status"] for a in res["attempts"]] == ["crash", "ok"]
    assert "crash" in prompt_of(res, 1)


def test_budget_exhaustion_keeps_every_attempt_and_exits_1(tmp_path, capsys):
    replies = [
        fenced(broken("relu__mismatch.py")),
        "I cannot help with that.",
        fenced(broken("relu__bad_input.py")),
    ]
    rc, res = optimize(tmp_path, capsys, replies, "--budget", "3")
    assert rc == 1 and res["status"] == "failed" and not res["correct"]
    assert [a["status"] for a in res["attempts"]] == ["mismatch", "bad_input", "bad_input"]
    assert res["stop_reason"] == "budget spent"
    assert res["best_kernel"] is None
    run_dir = Path(res["run_dir"])
    assert not (run_dir / "best_kernel.py").exists()
    assert sorted(p.name for p in (run_dir / "attempts").iterdir()) == ["00", "01", "02"]
    assert "no Python code" in prompt_of(res, 2)  # the reply without code is explained


def test_best_correct_kernel_is_kept_when_later_ones_fail(tmp_path):
    backend = ReplayBackend([fenced(GOOD), fenced(broken("relu__mismatch.py"))])
    cfg = AgentConfig(
        budget=2,
        samples_per_round=2,
        compiler_seed=False,
        trials=2,
        aot_target=None,
        runs_dir=str(tmp_path / "runs"),
        timeout_s=30,
    )
    res = run(RELU, cfg, backend=backend)
    assert res["correct"] and res["best"]["index"] == 0
    assert [a["status"] for a in res["attempts"]] == ["ok", "mismatch"]


def test_samples_per_round_drafts_and_evaluates_k_candidates(tmp_path):
    replies = [
        fenced(broken("relu__mismatch.py")),
        fenced(broken("relu__syntax_error.py")),
        fenced(broken("relu__crash.py")),
        fenced(GOOD),
    ]
    backend = ReplayBackend(replies)
    cfg = AgentConfig(
        budget=4,
        samples_per_round=2,
        compiler_seed=False,
        trials=2,
        aot_target=None,
        runs_dir=str(tmp_path / "runs"),
        timeout_s=30,
    )
    res = run(RELU, cfg, backend=backend)
    assert [c["n"] for c in backend.calls] == [2, 2]
    assert [a["round"] for a in res["attempts"]] == [1, 1, 2, 2]
    assert res["attempts"][3]["status"] == "ok" and res["correct"]
    # the refinement prompt refines the more promising attempt of round 1 (mismatch > syntax error)
    assert "elements outside atol" in backend.prompts[1]


def test_openai_backend_through_a_real_http_server(tmp_path, capsys, openai_server):
    openai_server.replies = [fenced(GOOD)]
    rc = main(
        [
            "optimize",
            RELU,
            "--backend",
            "openai",
            "--base-url",
            openai_server.url,
            "--budget",
            "2",
            "--no-compiler-seed",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *FAST_CLI,
        ]
    )
    res = last_json(capsys)
    assert rc == 0 and res["correct"]
    path, body = openai_server.requests[0]
    assert path.endswith("/completions")
    assert "ModelNew" in body["prompt"] and "class Model" in body["prompt"]
    assert body["temperature"] == 1.0 and body["top_p"] == 0.97


def test_unreachable_backend_ends_cleanly_with_a_hint(tmp_path, capsys):
    rc = main(
        [
            "optimize",
            RELU,
            "--backend",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--budget",
            "2",
            "--no-compiler-seed",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *FAST_CLI,
        ]
    )
    captured = capsys.readouterr()
    res = last_json_line(captured.out)
    # nothing was evaluated: exit 1, the error said once, no empty run directory (issue 17)
    assert rc == 1 and res["status"] == "error" and res["exit_code"] == 1
    assert "no usable reply" in res["message"]
    assert captured.err.count("vllm serve") == 1
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_hf_backend_with_a_tiny_local_llama(tmp_path, capsys, tiny_llama_dir):
    rc = main(
        [
            "optimize",
            RELU,
            "--backend",
            "hf",
            "--model",
            str(tiny_llama_dir),
            "--budget",
            "2",
            "--max-tokens",
            "24",
            "--no-compiler-seed",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--json",
            *FAST_CLI,
        ]
    )
    res = last_json(capsys)
    assert rc == 1  # a random model writes garbage; the loop must end cleanly, not crash
    assert len(res["attempts"]) == 2
    assert all(a["status"] in ("bad_input", "syntax_error") for a in res["attempts"])
    assert res["stop_reason"] == "budget spent"


def test_no_backend_and_no_compiler_seed_is_a_clear_error(tmp_path, capsys):
    rc = main(
        [
            "optimize",
            RELU,
            "--backend",
            "openai",
            "--budget",
            "1",
            "--no-compiler-seed",
            "--runs-dir",
            str(tmp_path / "runs"),
            *FAST_CLI,
        ]
    )
    # openai with no base URL defaults to localhost:8000, where nothing listens
    assert rc == 1
    assert "vllm serve" in capsys.readouterr().err


SLOW_GOOD = GOOD.replace(
    "super().__init__()", "super().__init__()\n        import time; time.sleep(6)"
)


@pytest.mark.slow  # docs/testing.md: resume is covered by test_interrupt*.py
def test_sigkill_mid_run_then_resume_loses_nothing(tmp_path):
    assert SLOW_GOOD != GOOD
    rfile = write_replies(
        tmp_path / "replies.jsonl", [fenced(broken("relu__mismatch.py")), fenced(SLOW_GOOD)]
    )
    runs = tmp_path / "runs"
    cmd = [
        sys.executable,
        "-m",
        "agent",
        "optimize",
        RELU,
        "--replies",
        rfile,
        "--no-compiler-seed",
        "--budget",
        "3",
        "--runs-dir",
        str(runs),
        "--run-id",
        "killme",
        "--json",
        *FAST_CLI,
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    first = runs / "killme" / "attempts" / "00" / "verdict.json"
    deadline = time.time() + 120
    while not first.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert first.exists(), (
        proc.stderr.read().decode() if proc.poll() is not None else "attempt 0 never written"
    )
    time.sleep(1.5)  # attempt 1 is now being verified (its constructor sleeps 6 s)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (runs / "killme" / "attempts" / "01").exists()
    assert not (runs / "killme" / "report.json").exists()

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "optimize",
            "--resume",
            "killme",
            "--runs-dir",
            str(runs),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    res = last_json_line(done.stdout)
    assert [a["status"] for a in res["attempts"]] == ["mismatch", "ok"]
    assert "resuming: 1 attempts" in done.stderr
    verdict0 = json.loads(first.read_text())
    assert verdict0["status"] == "mismatch"  # the earlier attempt is still there, untouched
    assert not list((runs / "killme").rglob("*.tmp"))


@pytest.mark.parametrize(
    "argv", [["optimize", "missing.py"], ["optimize"], ["optimize", RELU, "--budget", "0"]]
)
def test_bad_usage_exits_2(argv, capsys, tmp_path):
    assert main([*argv, "--runs-dir", str(tmp_path)]) == 2


KILLED = GOOD.replace(
    "        return relu(x)",
    "        import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)\n        return relu(x)",
)


def test_worker_killed_mid_job_is_a_crash_and_the_loop_goes_on(tmp_path, capsys):
    assert KILLED != GOOD
    rc, res = optimize(tmp_path, capsys, [fenced(KILLED), fenced(GOOD)], "--budget", "3")
    assert rc == 0
    assert [a["status"] for a in res["attempts"]] == ["crash", "ok"]
    assert "SIGKILL" in prompt_of(res, 1)


def test_problem_failing_at_run_time_exits_2_and_leaves_no_run_dir(tmp_path, capsys):
    bad = tmp_path / "p.py"
    bad.write_text(
        "import torch.nn as nn\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
        "def get_inputs():\n    raise RuntimeError('boom')\n"
        "def get_init_inputs():\n    return []\n"
    )
    runs = tmp_path / "runs"
    assert main(["optimize", str(bad), "--runs-dir", str(runs), *FAST_CLI]) == 2
    assert "get_inputs() raised" in capsys.readouterr().err
    assert not runs.exists() or not any(runs.iterdir())
