"""A candidate's Triton cache travels from its verification job to its timing job, and nowhere
else: the copy takes regular files only (no symlink is followed), a failed job's cache is not
kept, and a job without `triton_cache_in` starts empty."""

from __future__ import annotations

import os

import pytest

from tools.core.results import Verdict
from tools.sandboxing.job_files import copy_regular_files
from tools.sandboxing.sandbox import Sandbox

WRITE = """
import os
c = os.environ["TRITON_CACHE_DIR"]
os.makedirs(os.path.join(c, "k1"), exist_ok=True)
with open(os.path.join(c, "k1", "kernel.cubin"), "w") as f:
    f.write("compiled once")
os.symlink({secret!r}, os.path.join(c, "stolen"))
os.symlink(os.path.dirname({secret!r}), os.path.join(c, "stolen_dir"))
"""

READ = (
    "(lambda os: sorted(os.listdir(os.environ['TRITON_CACHE_DIR'])) + "
    "[open(p).read() for p in [os.path.join(os.environ['TRITON_CACHE_DIR'], 'k1', 'kernel.cubin')]"
    " if os.path.exists(p)])(__import__('os'))"
)


@pytest.fixture(scope="module")
def sb():
    return Sandbox(device="cpu", max_workers=1)


def test_cache_carried_from_one_job_to_the_next_without_symlinks(sb, tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("agent's private file")
    kept = tmp_path / "kept"
    out = sb.run("builtins:exec", WRITE.format(secret=str(secret)), triton_cache_out=str(kept))
    assert out.kind == "ok", out.error
    assert (kept / "k1" / "kernel.cubin").read_text() == "compiled once"
    assert not (kept / "stolen").exists() and not (kept / "stolen").is_symlink()
    assert not (kept / "stolen_dir").exists()

    seeded = sb.run("builtins:eval", READ, triton_cache_in=str(kept))
    assert seeded.kind == "ok", seeded.error
    assert seeded.value == ["k1", "compiled once"]

    fresh = sb.run("builtins:eval", READ)
    assert fresh.kind == "ok" and fresh.value == [], "a job's cache must start empty"


def test_a_failed_job_leaves_no_cache_behind(sb, tmp_path):
    kept = tmp_path / "kept"
    code = WRITE.format(secret=str(tmp_path / "nothing")) + "\nraise SystemExit(3)\n"
    out = sb.run("builtins:exec", code, triton_cache_out=str(kept))
    assert out.kind != "ok"
    assert not (kept / "k1").exists()


def test_copy_stops_at_its_byte_limit(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(4):
        (src / f"f{i}").write_bytes(b"x" * 1000)
    assert copy_regular_files(str(src), str(tmp_path / "dst"), max_bytes=2500) == 2000
    assert len(os.listdir(tmp_path / "dst")) == 2


class _Outcome:
    kind = "error"
    error = "stop here"
    stderr_tail = ""
    value = None


class _GpuVerifierThatKeepsCaches:
    device = "cuda"

    def __init__(self):
        self.kept: list[str] = []
        self.seeded: list[str] = []
        outer = self

        class _Sandbox:
            def run(self, fn, *args, **kwargs):
                outer.seeded.append(kwargs.get("triton_cache_in"))
                assert kwargs.get("exclusive") is True
                return _Outcome()

        self.sandbox = _Sandbox()

        class _Opts:
            seed = 0
            precision = "fp32"  # the baselines cache's key (tools.orchestrate.profile)

        self.options = _Opts()

    def verify(self, problem, source, path, triton_cache_out=None):
        self.kept.append(triton_cache_out)
        return Verdict(status="ok", compiled=True, correct=True, message="ok", device="cuda")


def test_the_timing_job_starts_from_its_own_verification_cache():
    from tools.orchestrate.profile import profile
    from tools.orchestrate.profile_result import ProfileOptions

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    v = _GpuVerifierThatKeepsCaches()
    r = profile(
        os.path.join(root, "examples", "problems", "relu.py"),
        "irrelevant",
        verifier=v,  # type: ignore[arg-type]
        options=ProfileOptions(use_cache=False),
    )
    assert r.status == "unavailable"  # the spy's timing job "failed"
    assert v.kept and v.kept == v.seeded and v.kept[0]
    assert not os.path.exists(v.kept[0]), "the carried cache is removed after the profile"


_COMPILE = '''
import os, sys
with open("kmod.py", "w") as f:
    f.write("""
import triton
import triton.language as tl

@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)
""")
sys.path.insert(0, os.getcwd())
import kmod
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

hits = []
triton.knobs.compilation.listener = lambda **kw: hits.append(kw["cache_hit"])
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
triton.compile(ASTSource(kmod.copy_kernel, sig, constexprs={"BLOCK": 128}),
               target=GPUTarget("cuda", 90, 32))
RESULT = hits
'''


def test_triton_finds_a_carried_kernel_in_its_cache(tmp_path):
    """Triton's cache records a kernel's files by absolute path (its `__grp__` index), and the
    first job's directory is gone when the second starts: the carried index must be rebased, or
    the second job compiles again. Compiled for sm_90 ahead of time: no GPU needed."""
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn", interpret=False)
    job = f"(lambda g: (exec({_COMPILE!r}, g), g['RESULT'])[1])({{}})"
    kept = tmp_path / "kept"
    first = sb.run("builtins:eval", job, triton_cache_out=str(kept), timeout=240)
    assert first.kind == "ok", first.error
    assert first.value == [False], "the first job compiles"
    again = sb.run("builtins:eval", job, triton_cache_in=str(kept), timeout=240)
    assert again.kind == "ok", again.error
    assert again.value == [True], "the second job must find the first job's kernel"
    fresh = sb.run("builtins:eval", job, timeout=240)
    assert fresh.kind == "ok" and fresh.value == [False], "without a carried cache: a compile"
