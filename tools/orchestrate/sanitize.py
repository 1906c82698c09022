"""One extra trial of a candidate under NVIDIA's compute-sanitizer (GPU only; `verify --sanitize`).

The verification proper compares outputs; it cannot see an out-of-bounds read that happened to
return harmless values, nor a shared-memory race that happened to resolve the right way. Here
the candidate runs once more, in a process of its own started under `compute-sanitizer` (one run
per tool: memcheck, racecheck), with the sandbox guard locked down as in a verification job, on
inputs from a fresh seed. A tool that reports errors turns an `ok` verdict into `runtime_error`
with the sanitizer's first findings.

    python -m tools.orchestrate.sanitize <problem.py> <kernel.py> <seed> <trial_seed>   (the child side)
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from tools.core.errors import BadInputError
from tools.core.problem_dtype import precision_env

TOOLS = ("memcheck", "racecheck")
ERROR_EXIT = 86
"""compute-sanitizer's exit status when it found errors (`--error-exitcode`)."""
_SUMMARY = re.compile(r"^=+ \w* ?SUMMARY:.*$", re.MULTILINE)
_ERRORS = re.compile(r"(\d+) errors?")


@dataclass(kw_only=True)
class SanitizerRun:
    tool: str
    ok: bool
    errors: int
    excerpt: str
    """The sanitizer's first findings (or why the run failed)."""


def sanitizer_path() -> str | None:
    """compute-sanitizer on PATH, under CUDA_HOME, or in /usr/local/cuda; None if absent."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if base:
            path = os.path.join(base, "bin", "compute-sanitizer")
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def run_sanitizer(
    problem_path: str,
    kernel_source: str,
    *,
    seed: int,
    timeout_s: float = 300.0,
    precision: str = "fp32",
) -> list[SanitizerRun]:
    """Run the candidate once under each tool, at `precision` (the verification's: its
    process gets `tools.core.problem_dtype.PRECISION_ENV`). Raises BadInputError where there is no
    compute-sanitizer (the message says how to get one)."""
    exe = sanitizer_path()
    if exe is None:
        raise BadInputError(
            "--sanitize: compute-sanitizer was not found (on PATH, $CUDA_HOME/bin or "
            "/usr/local/cuda/bin); it ships with the CUDA toolkit"
        )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = []
    for tool in TOOLS:
        with tempfile.TemporaryDirectory(prefix="ta-sanitize-") as work:
            kernel = os.path.join(work, "candidate.py")
            with open(kernel, "w") as f:
                f.write(kernel_source)
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
            env["TRITON_CACHE_DIR"] = os.path.join(work, "triton_cache")
            env["TMPDIR"] = work
            env["TA_DEVICE"] = "cuda"
            env.update(precision_env(precision))
            cmd = [
                exe,
                "--tool",
                tool,
                "--error-exitcode",
                str(ERROR_EXIT),
                sys.executable,
                "-m",
                "tools.orchestrate.sanitize",
                os.path.abspath(problem_path),
                kernel,
                str(seed),
                str(secrets.randbits(31)),
            ]
            try:
                done = subprocess.run(
                    cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s
                )
                out = (done.stdout or "") + (done.stderr or "")
                rc = done.returncode
            except subprocess.TimeoutExpired:
                runs.append(
                    SanitizerRun(
                        tool=tool, ok=False, errors=0, excerpt=f"timed out ({timeout_s:.0f} s)"
                    )
                )
                continue
        runs.append(_parse(tool, rc, out))
    return runs


def _parse(tool: str, rc: int, out: str) -> SanitizerRun:
    # "ERROR SUMMARY: 3 errors"; "RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)"
    m = _SUMMARY.search(out)
    counts = _ERRORS.findall(m.group(0)) if m else []
    errors = int(counts[-1]) if counts else 0
    lines = [ln for ln in out.splitlines() if ln.startswith("=========")]
    findings = [ln for ln in lines if "SUMMARY" not in ln][:12]
    if rc == ERROR_EXIT or errors:
        return SanitizerRun(tool=tool, ok=False, errors=max(errors, 1), excerpt="\n".join(findings))
    if rc != 0:
        tail = "\n".join(out.strip().splitlines()[-8:])
        return SanitizerRun(tool=tool, ok=False, errors=0, excerpt=f"exit status {rc}: {tail}")
    return SanitizerRun(tool=tool, ok=True, errors=0, excerpt="")


def apply(verdict, runs: list[SanitizerRun]):
    """The verdict after the sanitizer's runs: notes for each; an `ok` becomes
    `runtime_error` when a tool reported errors (or could not run the candidate)."""
    for r in runs:
        verdict.evidence.notes.append(
            f"compute-sanitizer {r.tool}: "
            + ("no errors" if r.ok else f"{r.errors} error(s)" if r.errors else "did not finish")
        )
    bad = next((r for r in runs if not r.ok), None)
    if bad is not None and verdict.correct:
        verdict.status = "runtime_error"
        verdict.correct = False
        first = bad.excerpt.strip().splitlines()[:3]
        verdict.message = (
            f"correct outputs, but compute-sanitizer {bad.tool} reported "
            + (f"{bad.errors} error(s)" if bad.errors else "a failure")
            + (": " + " / ".join(s.strip("= ") for s in first) if first else "")
        )[:1500]
    return verdict


def _child(problem_path: str, kernel_path: str, seed: int, trial_seed: int) -> int:
    """Run the candidate once on the GPU (inside compute-sanitizer), guarded like a job."""
    import torch

    from tools.job import guard
    from tools.job.job_common import (
        _copy_matching_weights,
        build_model,
        exec_module,
        load_problem,
        make_inputs,
    )

    with open(problem_path) as f:
        problem = load_problem(f.read(), problem_path)
    with open(kernel_path) as f:
        source = f.read()
    model, init = build_model(problem, seed, "cuda")
    inputs = make_inputs(problem, trial_seed, "cuda")
    guard.install(os.getcwd())
    guard.lock_down(kernel_path)
    cand = exec_module(source, kernel_path, "candidate")
    torch.manual_seed(seed)
    model_new = cand.ModelNew(*init).to("cuda")
    _copy_matching_weights(model, model_new)
    del model
    with torch.no_grad():
        model_new(*inputs)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
