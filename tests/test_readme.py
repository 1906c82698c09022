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


def _session_folder(name: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)-s(\d+)", name)
    return (m.group(1), int(m.group(2))) if m else None


def test_readme_names_the_newest_gpu_results_folder():
    # issue 37: the README's "latest results" pointer named an old folder; the newest session
    # folder (by date, then session number) is the one it must name
    text = (ROOT / "README.md").read_text()
    named = re.search(r"`benchmarks/results/gpu/` \(latest: `([^/`]+)/README\.md`\)", text)
    assert named, "README lost its pointer to the latest GPU results"
    folders = [p.name for p in (ROOT / "benchmarks/results/gpu").iterdir() if p.is_dir()]
    newest = max((f for f in folders if _session_folder(f)), key=_session_folder)
    assert named.group(1) == newest
    assert (ROOT / "benchmarks/results/gpu" / newest / "README.md").exists()
