"""`triton-agent --version`, and usage lines that name the command the user typed."""

from __future__ import annotations

import subprocess
import sys

from agent.version import package_version, prog_name
from tests.helpers import ROOT


def test_prog_name():
    assert prog_name("/usr/local/bin/triton-agent") == "triton-agent"
    assert prog_name("/repo/agent/__main__.py") == "python -m agent"


def test_version_and_usage_of_the_module_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "agent", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0 and out.stdout.strip() == f"triton-agent {package_version()}"
    usage = subprocess.run(
        [sys.executable, "-m", "agent", "verify"], capture_output=True, text=True, cwd=ROOT
    )
    assert usage.returncode == 2 and usage.stderr.startswith("usage: python -m agent verify")


def test_usage_of_the_console_script(tmp_path):
    """Run as `triton-agent` (a script of that name calling agent.cli:main, as pip writes it)."""
    script = tmp_path / "triton-agent"
    script.write_text("import sys\nfrom agent.cli import main\nsys.exit(main())\n")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    usage = subprocess.run(
        [sys.executable, str(script), "verify"], capture_output=True, text=True, env=env
    )
    assert usage.returncode == 2 and usage.stderr.startswith("usage: triton-agent verify")
