"""The process snapshot (`tools.integrity.ProcessSnapshot`) and a library's own imports: a
package attribute that re-exports another module under a name the import system has not
loaded (torch.onnx.symbolic_helper is torch.onnx._internal...symbolic_helper) is rebound by any
later `import torch.onnx.symbolic_helper` to that file's module. On the H200 (session 15) every
Liger-Kernel op was refused as `cheat` for it ("replacing torch.onnx.symbolic_helper (at
import)"). A re-pointed module that the import system did not load stays a change. Each case
in a fresh interpreter (the imports are the test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import os, sys, tempfile, types
os.chdir(tempfile.mkdtemp())
import torch, torch.onnx
from tools.integrity import ProcessSnapshot

snap = ProcessSnapshot()
case = sys.argv[1]
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
print(snap.changed())
"""


def _changed(case: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, case],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_a_library_importing_a_reexported_name_is_not_a_change():
    assert _changed("library_import") == "[]"


def test_a_module_the_import_system_did_not_load_from_a_file_is_a_change():
    assert _changed("forged_alias") == "['torch.onnx.symbolic_helper']"
    assert _changed("candidate_file") == "['torch.onnx.symbolic_helper']"
    assert _changed("tmp_file") == "['torch.onnx.symbolic_helper']"
    assert _changed("real_module") == "['torch.nn.functional']"
