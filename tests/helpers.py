"""Small helpers shared by the test files (standard library only).

Import them as `from tests.helpers import ...`, like tests/fakes (pyproject's pytest
`pythonpath = ["."]` puts the repository root on sys.path).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

# Fast verification settings: 2 trials, no AOT target, a 30 s timeout.
FAST = MappingProxyType({"trials": 2, "aot_target": None, "timeout_s": 30})  # Python API / MCP
FAST_CLI = ("--trials", "2", "--target", "none", "--timeout", "30")  # the same on the CLI


def fenced(code: str, prose: str = "Here is the kernel:") -> str:
    """A model reply: one line of prose, then the code in a ```python block."""
    return f"{prose}\n```python\n{code}\n```\n"


def write_replies(path: Path, texts: list[str]) -> str:
    """Write scripted replies as the replay backend's JSONL (`{"text": ...}` a line)."""
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return str(path)


def last_json_line(text: str) -> dict:
    """The JSON object on the last line of a command's output."""
    return json.loads(text.strip().splitlines()[-1])


def last_json(capsys) -> dict:
    """The JSON object on the last line of what the command printed to stdout (pytest capsys)."""
    return last_json_line(capsys.readouterr().out)


def sigint_as_default() -> None:
    """`preexec_fn` for a child a test interrupts: Ctrl-C's default action, whatever this
    process inherited. A test run started in the background from a shell without job control
    inherits SIGINT ignored, and the CLI rightly keeps an ignored SIGINT ignored (`nohup ... &`),
    so the test's SIGINT would go unheard."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_json_script(
    script: str,
    out: Path,
    *args: object,
    interpret: bool = True,
    env: dict | None = None,
    timeout: int = 300,
) -> dict:
    """Run `script` with `python -c SCRIPT *args` from the repository root (on PYTHONPATH), under
    the Triton interpreter unless `interpret=False`, with `env` added; fail the test with the
    tail of its stderr when it exits non-zero; return the JSON it wrote to `out`."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    if interpret:
        full["TRITON_INTERPRET"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        env=full, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(Path(out).read_text())


def run_python_script(args: list[str], workdir: Path, *, interpret: bool) -> None:
    """`python -c *args` from the repo root, with its own Inductor and Triton caches under
    `workdir`; `interpret`: under the Triton interpreter where there is no GPU (the variable is
    read when `@triton.jit` runs, so it is set before the process starts). Asserts it exits 0."""
    import os
    import subprocess
    import sys

    import torch

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret and not torch.cuda.is_available():
        env["TRITON_INTERPRET"] = "1"
    env.update(
        PYTHONPATH=str(ROOT),
        TORCHINDUCTOR_CACHE_DIR=str(workdir / "inductor-cache"),
        TRITON_CACHE_DIR=str(workdir / "triton-cache"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]


def cpu_timer(monkeypatch, event: type):
    """`tools.checks.timing.Timer`'s real loop on the CPU: CUDA's events replaced by `event`, its
    synchronisation and spin kernel by no-ops, and a Timer built without its GPU buffers."""
    import torch

    from tools.checks.timing import Timer

    monkeypatch.setattr(torch.cuda, "Event", event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda *a, **k: None, raising=False)
    timer = Timer.__new__(Timer)  # __init__ allocates the L2 flush buffer on the GPU
    timer.cache = torch.empty(16, dtype=torch.int32)
    timer.warmup_ms, timer.rep_ms, timer.min_reps, timer.max_reps = 0.05, 0.5, 20, 20
    timer.cycles_per_us, timer.pad_us = 1.0, 50.0
    timer.last_host_ms = timer.overhead_ms = 0.0
    timer.fresh = None
    return timer


_module_names = itertools.count()


def import_source(path: Path, source: str, prefix: str = "test_kernel"):
    """Write `source` to `path` and import it as a fresh module (a unique name in sys.modules:
    Triton's JIT reads a kernel's source through its module's file)."""
    path.write_text(source)
    name = f"{prefix}_{next(_module_names)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_UNPACKED: dict[str, Path] = {}


def recorded_bench(name: str = "gpu/2026-11-29-s3/run5_bench") -> Path:
    """A bench output directory recorded on a GPU, kept as `benchmarks/results/<name>.tgz`
    (issue 37: recorded results are data, not trees of kernel .py files), unpacked once per
    test process into a temporary directory; returns the unpacked directory."""
    if name not in _UNPACKED:
        import atexit
        import shutil
        import tarfile
        import tempfile

        where = Path(tempfile.mkdtemp(prefix="recorded_bench_"))
        atexit.register(shutil.rmtree, where, True)
        archive = ROOT / "benchmarks/results" / f"{name}.tgz"
        with tarfile.open(archive) as tar:
            tar.extractall(where, filter="data")
        _UNPACKED[name] = where / Path(name).name
    return _UNPACKED[name]
