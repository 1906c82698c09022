"""Issue 37: jobs are named by their function, which editors and import searches follow, not by
a "module:function" string. The sandbox takes the function and sends the job process its
reference (`tools.sandboxing.sandbox.job_ref`), resolved there as before."""

from __future__ import annotations

import ast
import re

import pytest

from tests.helpers import ROOT
from tools.core.errors import SandboxError
from tools.job.profile_worker import profile_job
from tools.sandboxing.job_process import _resolve
from tools.sandboxing.sandbox import Sandbox, job_ref


def double(x: int) -> int:
    """A job for the sandbox test."""
    return 2 * x


class Holder:
    @staticmethod
    def triple(x: int) -> int:
        return 3 * x


def test_a_module_level_function_is_named_by_module_and_qualified_name():
    assert job_ref(double) == f"{__name__}:double"  # as pytest imported this file
    assert _resolve(job_ref(double)) is double
    assert job_ref(Holder.triple) == f"{__name__}:Holder.triple"
    assert _resolve(job_ref(Holder.triple)) is Holder.triple
    assert job_ref(profile_job) == "tools.job.profile_worker:profile_job"
    assert job_ref("tools.job.worker:candidate_job") == "tools.job.worker:candidate_job"


def test_a_function_the_job_cannot_import_by_name_is_refused():
    def local(x):
        return x

    for fn in (local, lambda x: x, Sandbox(device="cpu", max_workers=1).run):
        with pytest.raises(SandboxError, match="module-level function"):
            job_ref(fn)


def test_the_sandbox_runs_a_job_given_as_a_function():
    out = Sandbox(device="cpu", max_workers=1).run(double, 21, timeout=120)
    assert out.kind == "ok", out.error
    assert out.value == 42


def _job_strings(path) -> set[str]:
    pattern = re.compile(r"^tools(\.\w+)+:\w+(\.\w+)*$")
    tree = ast.parse(path.read_text())
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and pattern.match(node.value)
    }


def test_no_job_is_named_by_a_string():
    found = {
        (path.relative_to(ROOT).as_posix(), s)
        for pkg in ("tools", "agent")
        for path in sorted((ROOT / pkg).rglob("*.py"))
        for s in _job_strings(path)
    }
    assert found == set(), sorted(found)
