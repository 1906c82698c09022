"""The README's recipes run as written (issue 38, item 8): the `--replies` JSONL example and the
tiny local base model for `train --base`.

Each recipe's Python block is read from the README and run in a temporary directory that sees
the checkout's `examples/`; the command after it is read from the README too and run in-process."""

from __future__ import annotations

import json
import os
import re
import runpy
import shlex
import textwrap
from pathlib import Path

import pytest

from agent.cli import main
from agent.dataset import PairRecord, pair_key
from agent.llm.replay import load_replies
from tests.helpers import EX, ROOT, last_json


def readme_block(marker: str) -> str:
    """The README's ```python block whose first line is `# <marker>`: ends at a line holding
    only the closing fence (the replies recipe has fences inside a string)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```$", text, flags=re.M | re.S)
    found = [textwrap.dedent(body) for _, body in blocks if body.lstrip().startswith(f"# {marker}")]
    assert len(found) == 1, f"{len(found)} README blocks start with # {marker}"
    return found[0]


def readme_command(pattern: str) -> list[str]:
    """The one README command (in backticks, possibly wrapped over lines) matching `pattern`."""
    text = (ROOT / "README.md").read_text()
    found = re.findall(rf"`(python -m agent {pattern}[^`]*)`", text)
    assert len(found) == 1, found
    argv = shlex.split(" ".join(found[0].split()))
    assert argv[:3] == ["python", "-m", "agent"]
    return argv[3:]


def run_block(code: str, where: Path, monkeypatch) -> None:
    (where / "examples").symlink_to(EX)
    monkeypatch.chdir(where)
    (where / "recipe.py").write_text(code)
    runpy.run_path(str(where / "recipe.py"), run_name="__main__")


def test_the_replies_recipe_writes_a_reply_the_loop_verifies(tmp_path, monkeypatch, capsys):
    run_block(readme_block("replies.jsonl"), tmp_path, monkeypatch)
    replies = load_replies(tmp_path / "replies.jsonl")
    assert len(replies) == 1 and "class ModelNew" in replies[0]

    args = readme_command("optimize examples/problems/relu.py --replies")
    rc = main([*args, "--runs-dir", str(tmp_path / "runs"), "--trials", "1", "--json"])
    result = last_json(capsys)
    assert rc == 0, result
    sources = [a.get("source") for a in result["attempts"]]
    assert result["best"]["source"] != "compiler", sources  # the scripted reply won


def write_pairs(path: Path, names: list[str]) -> None:
    lines = []
    for name in names:
        py = (EX / "problems" / f"{name}.py").read_text()
        tr = (EX / "kernels" / f"{name}.py").read_text()
        record = PairRecord(
            entry_point="Model",
            python_code=py,
            triton_code=tr,
            repo_name="examples",
            module_name=name,
            license="MIT",
            key=pair_key(py, tr),
            source="given",
            verdict="ok",
            trials=1,
            atol=1e-4,
            rtol=1e-4,
        )
        lines.append(json.dumps(record.to_dict()))
    path.write_text("\n".join(lines) + "\n")


def test_the_tiny_base_model_recipe_trains(tmp_path, monkeypatch, capsys):
    pytest.importorskip("trl", reason="training needs trl and datasets: pip install -e '.[train]'")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_block(readme_block("tiny-llama"), tmp_path, monkeypatch)
    assert (tmp_path / "tiny-llama" / "config.json").is_file()

    args = readme_command("train pairs.jsonl --base tiny-llama")
    write_pairs(tmp_path / "pairs.jsonl", ["relu", "scale_add_bias"])
    rc = main([*args, "--device", "cpu", "--json"])
    result = last_json(capsys)
    assert rc == 0, result
    assert (tmp_path / "tiny-tuned" / "config.json").is_file()
    assert os.path.samefile(Path(result["out"]).parent, tmp_path)
