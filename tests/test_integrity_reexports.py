"""The process snapshot (`tools.checks.process_snapshot.ProcessSnapshot`) and a library's own imports: a
package attribute that re-exports another module under a name the import system has not
loaded (torch.onnx.symbolic_helper is torch.onnx._internal...symbolic_helper) is rebound by any
later `import torch.onnx.symbolic_helper` to that file's module. On the H200 (session 15) every
Liger-Kernel op was refused as `cheat` for it ("replacing torch.onnx.symbolic_helper (at
import)"). A re-pointed module that the import system did not load stays a change. Each case
in a fresh process (the imports are the test): one interpreter imports torch once, and each
case runs in a child forked from it before any case has run (one torch import, not five)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CASE = r"""
import os, sys, tempfile, types
import torch
from tools.checks.process_snapshot import ProcessSnapshot

snap = ProcessSnapshot()
if case == "library_import":
    import torch.onnx.symbolic_helper  # noqa: F401  (what transformers does)
elif case == "forged_alias":  # a module made in memory, registered under the re-exported name
    fake = types.ModuleType("torch.onnx.symbolic_helper")
    sys.modules["torch.onnx.symbolic_helper"] = fake
    torch.onnx.symbolic_helper = fake
elif case == "candidate_file":  # a file of the job's own directory, imported under that name
    with open("symbolic_helper.py", "w") as f:
        f.write("def f(): pass\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("torch.onnx.symbolic_helper", "symbolic_helper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["torch.onnx.symbolic_helper"] = mod
    torch.onnx.symbolic_helper = mod
elif case == "tmp_file":  # a file written outside the job's directory, not an installed one
    path = os.path.join(tempfile.mkdtemp(), "symbolic_helper.py")
    with open(path, "w") as f:
        f.write("def f(): pass\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("torch.onnx.symbolic_helper", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules["torch.onnx.symbolic_helper"] = mod
    torch.onnx.symbolic_helper = mod
elif case == "real_module":  # torch.nn.functional is loaded under its own name: never rebound
    fake = types.ModuleType("torch.nn.functional")
    sys.modules["torch.nn.functional"] = fake
    torch.nn.functional = fake
else:
    raise ValueError(case)
changed = str(snap.changed())
"""

SCRIPT = r"""
import json, os, sys, tempfile, traceback
os.chdir(tempfile.mkdtemp())
import torch, torch.onnx
import tools.checks.process_snapshot  # noqa: F401

for case in sys.argv[2:]:
    pid = os.fork()
    if pid == 0:  # the child: the parent's state, no case run before it
        try:
            ns = {"case": case}
            exec(sys.argv[1], ns)
            print(json.dumps([case, ns["changed"]]), flush=True)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"case {case}: the child exited with status {status}")
"""

CASES = ("library_import", "forged_alias", "candidate_file", "tmp_file", "real_module")


@pytest.fixture(scope="module")
def changed() -> dict[str, str]:
    """`snap.changed()` of each case, each in its own child of one interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, CASE, *CASES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = dict(json.loads(line) for line in proc.stdout.splitlines() if line.startswith("["))
    assert set(out) == set(CASES), (out, proc.stderr[-2000:])
    return out


def test_a_library_importing_a_reexported_name_is_not_a_change(changed):
    assert changed["library_import"] == "[]"


def test_a_module_the_import_system_did_not_load_from_a_file_is_a_change(changed):
    assert changed["forged_alias"] == "['torch.onnx.symbolic_helper']"
    assert changed["candidate_file"] == "['torch.onnx.symbolic_helper']"
    assert changed["tmp_file"] == "['torch.onnx.symbolic_helper']"
    assert changed["real_module"] == "['torch.nn.functional']"
