"""The README's quick-start commands stay true: the main job runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, last_json_line


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [m.strip() for m in re.findall(r"^    (\S.*)$", section, flags=re.M)]


def test_quick_start_has_exactly_two_commands():
    cmds = quick_start_commands()
    assert len(cmds) == 2, cmds
    assert "python -m agent optimize" in cmds[0]
    assert "pytest" in cmds[1]


def test_main_command_runs_end_to_end(tmp_path):
    main_cmd = quick_start_commands()[0].split("&&", 1)[1].strip()
    argv = main_cmd.split()
    assert argv[:3] == ["python", "-m", "agent"]
    proc = subprocess.run(
        [sys.executable, *argv[1:], "--runs-dir", str(tmp_path), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = last_json_line(proc.stdout)
    assert result["correct"] and result["best"]["source"] == "compiler"
    best = Path(result["best_kernel"]).read_text()
    assert "@triton.jit" in best and "class ModelNew" in best
    assert "compiler drafter (no model configured)" in proc.stderr
