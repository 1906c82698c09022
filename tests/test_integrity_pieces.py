"""Issue 37 split modules that run in the candidate's process into pieces of a screen each. The
integrity snapshot (`tools.checks.integrity.Integrity`) watched each whole module: every function
(replacing one is tampering) and its globals (a name added there shadows a builtin for that
module's code). It watches every piece the same way, so replacing a function that moved into a
piece (the guard's file check, the accounting of a forward call) is still tampering. Run in a fresh
interpreter: the snapshot imports the harness's modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

PIECES = {
    "tools.job.guard": (
        "tools.job.guard_rules._deny",
        "tools.job.guard_files._check_open",
        "tools.job.guard_files.toolchain_dirs",
        "tools.job.guard_locked._check_locked",
        "tools.job.guard_locked._check_stack_walk",
    ),
    "tools.job.interp_checks": (
        "tools.job.interp_races.RaceDetector",
        "tools.job.interp_libdevice.wrap_grid_executor",
    ),
    "tools.checks.audit": (
        "tools.checks.audit_ops.op_name",
        "tools.checks.audit_mode.AuditMode",
        "tools.checks.constructor_audit.ConstructorAuditMode",
    ),
    "tools.checks.integrity": (
        "tools.checks.integrity_targets.integrity_targets",
        "tools.checks.process_snapshot._rebound_by_import",
        "tools.checks.run_hooks.hooks",
    ),
    "tools.job.worker": (
        "tools.job.candidate_arming.arm_harness",
        "tools.job.candidate_arming.construct_candidate",
        "tools.job.candidate_trials.run_trials",
        "tools.job.candidate_evidence.check_integrity",
        "tools.job.candidate_evidence.account_run",
    ),
}
"""A function of each piece, by the module it was split from."""

SCRIPT = r"""
import importlib, json, sys
from tools.checks.integrity import HARNESS_MODULES, Integrity

out = {}
for dotted in json.loads(sys.argv[1]):
    modname, name = dotted.rsplit(".", 1)
    mod = importlib.import_module(modname)
    snap = Integrity()
    original = getattr(mod, name)
    setattr(mod, name, lambda *args, **kwargs: None)
    replaced = snap.changed()
    setattr(mod, name, original)
    mod.isinstance = lambda *args: True  # shadows the builtin for the module's code
    added = snap.changed()
    del mod.isinstance
    out[dotted] = {
        "replaced": dotted in replaced,
        "added": any(c.startswith(f"the globals of {modname} ") for c in added),
        "harness module": modname in HARNESS_MODULES,
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def found() -> dict[str, dict[str, bool]]:
    functions = [f for pieces in PIECES.values() for f in pieces]
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(functions)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("function", [f for pieces in PIECES.values() for f in pieces])
def test_each_piece_is_watched_as_its_module_was(found, function):
    assert found[function] == {"replaced": True, "added": True, "harness module": True}
