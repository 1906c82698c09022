"""Self-check of examples/ that does not depend on the project's verifier.

Every correct kernel in examples/kernels/ must match its problem in examples/problems/ under the
Triton interpreter, and every file in examples/broken/ must be named
`<existing problem>__<verdict status>.py`, so the verifier's tests can read the expected status
off the file name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import EX, last_json_line

PROBLEMS = EX / "problems"
KERNELS = EX / "kernels"
BROKEN = EX / "broken"

# Kept here rather than imported from tools.core.results so this check stands on its own.
# "ok" and "slower" are not failures a broken example can demonstrate on a CPU.
BROKEN_STATUSES = {
    "bad_input",
    "syntax_error",
    "compile_error",
    "runtime_error",
    "crash",
    "timeout",
    "mismatch",
    "shape_mismatch",
    "cheat",
    "policy",
}

REQUIRED_PROBLEMS = {
    "relu",
    "softmax",
    "layernorm",
    "sum_reduction",
    "matmul",
    "linear_gelu",
    "mse_loss",
    "multi_io",
    "scale_add_bias",
}

SEEDS = (0, 1)

# Runs in a fresh interpreter: TRITON_INTERPRET must be set before triton is first imported.
# Prints one JSON object: {problem: null on success, or the error text}.
_CHECK_SCRIPT = r"""
import importlib.util, json, sys, traceback
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)

def check(problem_path, kernel_path, seeds):
    prob = load(problem_path, "problem")
    cand = load(kernel_path, "candidate")
    init = prob.get_init_inputs()
    torch.manual_seed(0)
    model = prob.Model(*init)
    torch.manual_seed(0)
    model_new = cand.ModelNew(*init)
    model_new.load_state_dict(model.state_dict(), strict=False)
    for seed in seeds:
        torch.manual_seed(seed)
        inputs = prob.get_inputs()
        with torch.no_grad():
            ref = as_tuple(model(*[x.clone() for x in inputs]))
            got = as_tuple(model_new(*[x.clone() for x in inputs]))
        if len(ref) != len(got):
            return f"seed {seed}: {len(got)} outputs, expected {len(ref)}"
        for i, (r, g) in enumerate(zip(ref, got)):
            if r.shape != g.shape or r.dtype != g.dtype:
                return (f"seed {seed} output {i}: got {tuple(g.shape)} {g.dtype}, "
                        f"expected {tuple(r.shape)} {r.dtype}")
            if not torch.allclose(g, r, atol=1e-4, rtol=1e-4):
                err = (g - r).abs().max().item()
                return f"seed {seed} output {i}: max abs error {err:.3g}"
    return None

jobs, seeds = json.loads(sys.argv[1])
results = {}
for name, problem_path, kernel_path in jobs:
    try:
        results[name] = check(problem_path, kernel_path, seeds)
    except Exception:
        results[name] = traceback.format_exc(limit=3)
print(json.dumps(results))
"""


def _problem_names() -> set[str]:
    return {p.stem for p in PROBLEMS.glob("*.py") if not p.name.startswith("_")}


@pytest.fixture(scope="module")
def kernel_results() -> dict[str, str | None]:
    """Run every problem that has a same-named correct kernel, all in one interpreter process."""
    names = sorted(n for n in _problem_names() if (KERNELS / f"{n}.py").exists())
    jobs = [(n, str(PROBLEMS / f"{n}.py"), str(KERNELS / f"{n}.py")) for n in names]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK_SCRIPT, json.dumps([jobs, list(SEEDS)])],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"check process failed:\n{proc.stderr[-4000:]}"
    return last_json_line(proc.stdout)


def test_required_problems_exist():
    missing = REQUIRED_PROBLEMS - _problem_names()
    assert not missing, f"missing problems: {sorted(missing)}"


def test_every_problem_has_a_kernel():
    missing = sorted(n for n in _problem_names() if not (KERNELS / f"{n}.py").exists())
    assert not missing, f"problems without a correct kernel: {missing}"


@pytest.mark.parametrize("name", sorted(REQUIRED_PROBLEMS))
def test_kernel_matches_problem(kernel_results, name):
    assert name in kernel_results, f"{name} was not checked"
    assert kernel_results[name] is None, f"{name}: {kernel_results[name]}"


def test_broken_files_are_named_problem__status():
    bad = []
    for path in sorted(BROKEN.glob("*.py")):
        problem, sep, status = path.stem.partition("__")
        if not sep or problem not in _problem_names() or status not in BROKEN_STATUSES:
            bad.append(path.name)
    assert not bad, f"not <problem>__<status>.py: {bad}"


def test_every_broken_status_is_covered():
    covered = {p.stem.partition("__")[2] for p in BROKEN.glob("*.py")}
    missing = BROKEN_STATUSES - covered
    assert not missing, f"no broken example for: {sorted(missing)}"
