"""scripts/install_browser.sh (issue 38, item 9), run with stub package managers: it installs the
first package the system offers (Debian 12's chromium-headless-shell, else chromium), says why
when it cannot (not root, no package, a failing apt-get), and never fails the install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT

SCRIPT = ROOT / "scripts" / "install_browser.sh"


def stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path):
    """A PATH whose id, sudo, apt-get and apt-cache are stubs; calls are logged to calls.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    stub(bin_dir, "id", 'echo "${STUB_UID:-0}"')
    stub(bin_dir, "sudo", 'echo "sudo $*" >> "$STUB_LOG"; [ "$1" = -n ] && shift; '
         '[ -n "$STUB_SUDO" ] && exec "$@"; exit 1')  # fmt: skip
    stub(bin_dir, "apt-get", 'echo "apt-get $*" >> "$STUB_LOG"; exit "${STUB_APT_RC:-0}"')
    stub(
        bin_dir,
        "apt-cache",
        'for p in $STUB_PACKAGES; do [ "$p" = "$2" ] && { echo "  Candidate: 1.0"; exit 0; }; '
        'done; echo "  Candidate: (none)"',
    )

    def run(**env: str) -> tuple[str, list[str]]:
        full = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "STUB_LOG": str(log),
            "TRITON_AGENT_BROWSERS": "no-such-browser-here",
            **env,
        }
        out = subprocess.run(
            ["bash", str(SCRIPT)], capture_output=True, text=True, env=full, timeout=60
        )
        assert out.returncode == 0, out.stderr  # never fatal
        calls = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return out.stderr, calls

    return run, bin_dir


def installs(calls: list[str]) -> list[str]:
    return [c.split()[-1] for c in calls if c.startswith("apt-get install")]


def test_debian_12_gets_the_headless_shell(machine):
    run, _ = machine
    err, calls = run(STUB_PACKAGES="chromium-headless-shell chromium")
    assert installs(calls) == ["chromium-headless-shell"]
    assert "installed chromium-headless-shell 1.0 with apt-get" in err


def test_without_the_headless_shell_package_it_takes_chromium(machine):
    """Where apt offers only `chromium` (older Debian): the old CI asked for the headless shell
    alone and skipped the test."""
    run, _ = machine
    err, calls = run(STUB_PACKAGES="chromium chromium-browser")
    assert installs(calls) == ["chromium"]


def test_no_package_says_so_and_installs_nothing(machine):
    run, _ = machine
    err, calls = run(STUB_PACKAGES="chromium-browser")  # Ubuntu: the snap shim only
    assert installs(calls) == []
    assert "apt has no chromium-headless-shell or chromium package" in err


def test_not_root_uses_passwordless_sudo_or_says_it_needs_root(machine):
    run, _ = machine
    err, calls = run(STUB_UID="1000", STUB_SUDO="1", STUB_PACKAGES="chromium")
    assert "sudo -n apt-get install -y -qq --no-install-recommends chromium" in calls
    err, calls = run(STUB_UID="1000", STUB_PACKAGES="chromium")
    assert installs(calls) == []
    assert "needs root or passwordless sudo" in err


def test_a_failing_apt_get_is_reported_not_fatal(machine):
    run, _ = machine
    err, calls = run(STUB_APT_RC="100", STUB_PACKAGES="chromium")
    assert "apt-get update failed" in err and installs(calls) == []


def test_a_working_browser_is_kept(machine):
    run, bin_dir = machine
    stub(bin_dir, "fake-chromium", 'echo "Chromium 1.2.3"')
    err, calls = run(TRITON_AGENT_BROWSERS="fake-chromium", STUB_PACKAGES="chromium")
    assert calls == [] and "Chromium 1.2.3" in err
    assert os.access(bin_dir / "fake-chromium", os.X_OK)
