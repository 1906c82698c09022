"""The toolchain is trusted where this machine's PATH finds it when the job starts, not only in
the usual directories: the H200 machine's gcc is /opt/gcc/bin/gcc, and a fixed list of system
directories made the guard refuse Triton's launcher build there, so every correct kernel was
judged `cheat` (GPU run, session 5). A program the candidate writes is still never run."""

from __future__ import annotations

import os

from tools.sandboxing.sandbox import Sandbox

_RUN_MACHINE_GCC = """
import os, subprocess
from tools.job import guard
subprocess.run([GCC], check=True)
with open("gcc", "w") as f:
    f.write("#!/bin/sh\\ntouch " + OWN_MARKER + "\\n")
os.chmod("gcc", 0o755)
try:
    subprocess.run([os.path.abspath("gcc")])
    own = "ran"
except PermissionError:
    own = "refused"
result = (own, list(guard.VIOLATIONS))
"""


def test_a_compiler_outside_the_system_directories_on_path_runs_the_jobs_own_does_not(
    tmp_path, monkeypatch
):
    machine_bin = tmp_path / "opt" / "gcc" / "bin"
    machine_bin.mkdir(parents=True)
    marker, own_marker = tmp_path / "machine_gcc_ran", tmp_path / "own_gcc_ran"
    gcc = machine_bin / "gcc"
    gcc.write_text(f"#!/bin/sh\ntouch {marker}\n")
    gcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{machine_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn")  # this env, not a forkserver's
    source = f"GCC = {str(gcc)!r}\nOWN_MARKER = {str(own_marker)!r}\n" + _RUN_MACHINE_GCC
    expr = f"(lambda g: (exec({source!r}, g), g.get('result'))[1])({{}})"
    out = sb.run("builtins:eval", expr, timeout=60)
    assert out.kind == "ok", out.error
    own, violations = out.value
    assert marker.exists(), "the machine's gcc (on PATH when the job started) must run"
    assert own == "refused" and not own_marker.exists(), violations
    assert len(violations) == 1 and "not an installed toolchain program" in violations[0]


def test_the_compiler_named_by_cc_runs_though_not_on_path(tmp_path, monkeypatch):
    machine_bin = tmp_path / "opt" / "gcc" / "bin"
    machine_bin.mkdir(parents=True)
    marker, own_marker = tmp_path / "machine_gcc_ran", tmp_path / "own_gcc_ran"
    gcc = machine_bin / "gcc"
    gcc.write_text(f"#!/bin/sh\ntouch {marker}\n")
    gcc.chmod(0o755)
    monkeypatch.setenv("CC", str(gcc))
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn")  # this env, not a forkserver's
    source = f"GCC = {str(gcc)!r}\nOWN_MARKER = {str(own_marker)!r}\n" + _RUN_MACHINE_GCC
    expr = f"(lambda g: (exec({source!r}, g), g.get('result'))[1])({{}})"
    out = sb.run("builtins:eval", expr, timeout=60)
    assert out.kind == "ok", out.error
    own, violations = out.value
    assert marker.exists(), "the compiler $CC names must run (Triton builds its launcher with it)"
    assert own == "refused" and not own_marker.exists(), violations


def test_torch_and_triton_bundled_toolchains_are_trusted_the_jobs_dir_is_not(tmp_path):
    """Inductor compiles with torch/bin/ptxas and Triton with its backends' ptxas: refused on
    the H200 machine, the torch.compile baseline was missing from every profile (session 5)."""
    import torch
    import triton

    from tools.job import guard

    dirs = guard.toolchain_dirs()
    assert os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "bin")) in dirs
    assert os.path.realpath(os.path.join(os.path.dirname(triton.__file__), "backends")) in dirs
    assert not any(d.startswith(str(tmp_path)) for d in dirs)
