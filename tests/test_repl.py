"""`python -m agent repl` through a pseudo-terminal: paste a module, Ctrl-D, read the verdict."""

from __future__ import annotations

import sys

import pexpect

from tests.helpers import EX, ROOT, write_replies

ANSI = r"(?:\x1b\[[0-9;]*m)*"
CTRL_D = "\x04"


def spawn(*args: str):
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent", "repl", *args],
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=180,
        dimensions=(50, 200),
    )
    child.expect("Ctrl-D on an empty buffer exits")
    return child


def paste(child, text: str) -> None:
    for line in text.splitlines():
        child.sendline(line)
    child.send(CTRL_D)


def test_paste_a_module_get_a_verified_draft(tmp_path):
    problem = (EX / "problems" / "relu.py").read_text()
    good = (EX / "kernels" / "relu.py").read_text()
    replies = write_replies(tmp_path / "replies.jsonl", [f"```python\n{good}\n```"])
    runs = tmp_path / "runs"
    child = spawn(
        "--backend",
        "replay",
        "--replies",
        replies,
        "--runs-dir",
        str(runs),
        "--trials",
        "2",
        "--target",
        "none",
        "--timeout",
        "30",
    )
    assert "backend replay" in child.before

    paste(child, problem)
    child.expect("draft 0")
    child.expect(f"verdict: {ANSI}ok")
    child.expect("correct kernel")
    child.expect("run dir: ")

    # not a problem: said plainly, the session goes on
    paste(child, "import torch\nx = torch.ones(3)\n")
    child.expect("cannot use this module")

    child.send(CTRL_D)  # Ctrl-D on an empty buffer leaves
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    prompts = list(runs.glob("*/attempts/00/prompt.txt"))
    assert len(prompts) == 1
    sent = prompts[0].read_text()
    assert (
        "class Model(nn.Module)" in sent and problem.strip() in sent
    )  # the pasted module was used
    assert (runs / "inputs").is_dir()


def test_plain_module_without_inputs_is_explained(tmp_path):
    child = spawn("--runs-dir", str(tmp_path / "runs"), "--target", "none")
    assert "compiler" in child.before  # no model configured: the compiler drafts
    paste(
        child,
        "import torch\nclass Double(torch.nn.Module):\n    def forward(self, x):\n        return 2 * x\n",
    )
    child.expect("get_inputs")
    child.send(CTRL_D)
    child.expect("bye")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
