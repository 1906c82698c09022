"""Tracked files name no directory of the machine they were made on."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers import ROOT


def test_no_tracked_file_contains_this_checkouts_path():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    needle = str(ROOT) + "/"
    offenders = []
    for name in files:
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if needle in text:
            offenders.append(name)
    assert offenders == [], f"machine paths in tracked files: {offenders}"
