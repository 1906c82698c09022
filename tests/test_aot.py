"""tools.compile.aot: launch recording, AOT compilation for sm_90 without a GPU, error -> file line.

Candidates are written to `tmp_path` and imported with importlib, so file/line mapping is real.
Compiling needs no interpreter; recording and interpreter errors run with `TRITON_INTERPRET=1`
set before the candidate is imported (Triton reads it when `@triton.jit` runs).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import triton

from tests.helpers import last_json_line
from tools.compile.aot import aot_compile, aot_compile_all
from tools.compile.cuda_targets import parse_target
from tools.compile.error_map import map_exception
from tools.compile.launch_record import LaunchRecord, record_launches
from tools.core.results import KernelResources, SourceError

_counter = itertools.count()

HEADER = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

ADD = (
    HEADER
    + """

@triton.jit
def _twice(x):
    return x * 2.0


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _twice(x) + y, mask=mask)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"]) // 4})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 256),)](x, y_ptr=y, out_ptr=out, n=n, BLOCK_SIZE=256, num_warps=8)
        out2 = torch.empty_like(x)
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, out2, n, 0.5, num_stages=2)
        return out2
"""
)

BROKEN = (
    HEADER
    + """

@triton.jit
def _plus_missing(x):
    return x + undefined_thing


@triton.jit
def arange_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def name_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = not_defined_anywhere + 1.0
    tl.store(x_ptr + offs, y, mask=offs < n)


@triton.jit
def helper_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, _plus_missing(x), mask=offs < n)


@triton.jit
def spill_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    # [R, C] fp32 tile held across two reductions: R*C/32 values per thread with one warp.
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    x = x / tl.sum(x, axis=1)[:, None]
    x = x * tl.max(x, axis=0)[None, :]
    tl.store(out_ptr + rows * C + cols, x)
"""
)

RUNTIME_ERRORS = (
    HEADER
    + """

@triton.jit
def bad_shape_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.reshape(x, (3, BLOCK))
    tl.store(x_ptr + offs, tl.sum(y, axis=0), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        if self.mode == "name":
            return x * scale_factor
        bad_shape_kernel[(1,)](x, x.numel(), BLOCK=16)
        return x
"""
)


ASM_AND_SMEM = (
    HEADER
    + """

@triton.jit
def asm_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise("bogus.op.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr + offs, y, mask=offs < n)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # num_stages copies of an fp16 [BM, BK] and [BK, BN] tile are kept in shared memory.
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm * BN + rn, acc)
"""
)

# The worker's situation: TRITON_INTERPRET=1 before Triton is imported, so the standard library
# (tl.max, x.sum(), tl.sigmoid, tl.cdiv, tl.zeros_like) is interpreted too, and the interpreter
# leaves some of its patches behind. AOT compilation must still see real Triton, and the
# interpreter must still work afterwards.
SOFTMAX = (
    HEADER
    + """

@triton.jit
def _row_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = tl.sigmoid(e / e.sum(axis=0)) + tl.zeros_like(e) + tl.cdiv(n_cols, 2) * 0
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _row_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
"""
)

WORKER = """
import importlib.util, json, sys
import torch
from tools.compile.aot import aot_compile_all
from tools.compile.launch_record import record_launches
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
x = torch.randn(8, 100)
expected = torch.sigmoid(torch.softmax(x, dim=1))
with record_launches() as records:
    first = module.ModelNew()(x)
resources, errors = aot_compile_all(records, "sm_90")
second = module.ModelNew()(x)
print(json.dumps({
    "interpreted": type(module._row_kernel).__name__,
    "ok_before": torch.allclose(first, expected, atol=1e-5),
    "ok_after": torch.allclose(second, expected, atol=1e-5),
    "resources": [r.__dict__ for r in resources],
    "errors": [e.__dict__ for e in errors],
}))
"""


def _import(tmp_path: Path, source: str):
    """Write `source` to tmp_path/candidate.py and import it under a fresh module name."""
    path = tmp_path / "candidate.py"
    path.write_text(source)
    name = f"candidate_aot_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def _line_of(path: Path, needle: str) -> int:
    """1-based line of the only line in `path` containing `needle`."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    assert len(hits) == 1, hits
    return hits[0]


def _record(kernel, signature, constexprs, **kwargs) -> LaunchRecord:
    return LaunchRecord(
        name=kernel.__name__,
        fn=kernel,
        signature=signature,
        constexprs=constexprs,
        file=kernel.fn.__code__.co_filename,
        aligned=[name for name, ty in signature.items() if ty.startswith("*")],
        **kwargs,
    )


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _private_triton_cache(tmp_path, monkeypatch):
    # A fresh on-disk cache, so every test really compiles.
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def test_parse_target():
    assert parse_target("sm_90") == ("sm_90", 90)
    assert parse_target("sm_90a") == ("sm_90", 90)
    assert parse_target("sm_100") == ("sm_100", 100)
    assert parse_target(80) == ("sm_80", 80)
    assert parse_target("H100") == ("sm_90", 90)
    with pytest.raises(ValueError):
        parse_target("vega")


def test_record_launches_under_interpreter(tmp_path, interpret):
    module, path = _import(tmp_path, ADD)
    x, y = torch.randn(1000), torch.randn(1000)
    with record_launches() as records:
        out = module.ModelNew()(x, y)
    torch.testing.assert_close(out, (2 * x + y) * 0.5)

    add, scale = records
    assert add.name == "add_kernel"
    assert add.signature == {
        "x_ptr": "*fp32",
        "y_ptr": "*fp32",
        "out_ptr": "*fp32",
        "n": "i32",
        "BLOCK_SIZE": "constexpr",
    }
    assert add.constexprs == {"BLOCK_SIZE": 256}
    assert (add.num_warps, add.num_stages, add.grid) == (8, 3, (4,))
    assert add.file == str(path) and add.first_line == _line_of(path, "def add_kernel")
    assert set(add.aligned) == {"x_ptr", "y_ptr", "out_ptr"}

    # Behind @triton.heuristics: the underlying kernel, the computed BLOCK, a float arg.
    assert scale.name == "scale_kernel"
    assert scale.signature["alpha"] == "fp32"
    assert scale.constexprs == {"BLOCK": 256}
    assert (scale.num_warps, scale.num_stages, scale.grid) == (4, 2, (4,))
    json.dumps([r.to_dict() for r in records])

    # The originals are back.
    from triton.runtime.interpreter import InterpretedFunction

    assert InterpretedFunction.run.__qualname__ == "InterpretedFunction.run"


def test_recorded_interpreted_kernels_compile_for_sm90(tmp_path, interpret):
    module, _ = _import(tmp_path, ADD)
    x = torch.randn(1000)
    with record_launches() as records:
        for _ in range(3):
            module.ModelNew()(x, x)
    assert len(records) == 6
    resources, errors = aot_compile_all(records, "sm_90")
    assert errors == []
    assert [r.name for r in resources] == ["add_kernel", "scale_kernel"]
    for res in resources:
        assert isinstance(res, KernelResources)
        assert res.target == "sm_90"
        assert res.registers > 0
        assert res.spills_bytes == 0
        assert res.shared_bytes is not None
    assert resources[0].num_warps == 8 and resources[0].constexprs == {"BLOCK_SIZE": 256}


def test_add_kernel_compiles_and_is_cached(tmp_path):
    module, _ = _import(tmp_path, ADD)
    record = _record(
        module.add_kernel,
        {
            "x_ptr": "*fp32",
            "y_ptr": "*fp32",
            "out_ptr": "*fp32",
            "n": "i32",
            "BLOCK_SIZE": "constexpr",
        },
        {"BLOCK_SIZE": 1024},
    )
    first = aot_compile(record, "sm_90")
    assert isinstance(first, KernelResources), first
    assert first.registers > 0 and first.spills_bytes == 0
    assert first.num_warps == 4 and first.num_stages == 3
    assert aot_compile(record, "sm_90") == first  # from the in-process cache
    on_a100 = aot_compile(record, "sm_80")
    assert isinstance(on_a100, KernelResources) and on_a100.target == "sm_80"


@pytest.mark.parametrize(
    ("kernel", "needle", "words"),
    [
        ("arange_kernel", "tl.arange(0, 100)", "power of 2"),
        ("name_kernel", "not_defined_anywhere", "not_defined_anywhere is not defined"),
        # The error is inside a @triton.jit helper: the helper's line, and the call site.
        ("helper_kernel", "return x + undefined_thing", "undefined_thing is not defined"),
    ],
)
def test_compile_error_points_at_candidate_line(tmp_path, kernel, needle, words):
    module, path = _import(tmp_path, BROKEN)
    record = _record(
        getattr(module, kernel),
        {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 128},
    )
    err = aot_compile(record, "sm_90")
    assert isinstance(err, SourceError), err
    assert err.kind == "CompilationError"
    assert err.line == _line_of(path, needle)
    assert needle in err.code
    assert words in err.message
    if kernel == "helper_kernel":
        assert f"line {_line_of(path, '_plus_missing(x), mask')}" in err.message


def test_spilling_kernel_reports_spills(tmp_path):
    module, _ = _import(tmp_path, BROKEN)
    record = _record(
        module.spill_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "R": "constexpr", "C": "constexpr"},
        {"R": 64, "C": 256},
        num_warps=1,
    )
    res = aot_compile(record, "sm_90")
    assert isinstance(res, KernelResources), res
    # 512 live fp32 values per thread do not fit in 255 registers.
    assert res.registers > 100
    assert res.spills_bytes > 0


def test_map_exception_name_error_in_forward(tmp_path):
    module, path = _import(tmp_path, RUNTIME_ERRORS)
    with pytest.raises(NameError) as info:
        module.ModelNew("name")(torch.randn(4))
    err = map_exception(info.value, path)
    assert err.kind == "NameError"
    assert err.line == _line_of(path, "x * scale_factor")
    assert err.code.strip() == "return x * scale_factor"
    assert "scale_factor" in err.message.splitlines()[-1]
    assert "site-packages" not in err.message and __file__ not in err.message


def test_map_exception_interpreter_error_in_kernel(tmp_path, interpret):
    module, path = _import(tmp_path, RUNTIME_ERRORS)
    with record_launches() as records, pytest.raises(Exception) as info:
        module.ModelNew("kernel")(torch.randn(16))
    assert [r.name for r in records] == ["bad_shape_kernel"]  # recorded before it failed
    err = map_exception(info.value, path)
    assert err.line == _line_of(path, "tl.reshape(x, (3, BLOCK))")
    assert "tl.reshape" in err.code
    assert err.kind != "InterpreterError"  # the error the kernel body raised, not the wrapper
    assert f"line {_line_of(path, 'bad_shape_kernel[(1,)]')}, in forward" in err.message
    assert len(err.message) <= 2000 and len(err.message.splitlines()) <= 30

    # The same kernel through the real compiler: a CompilationError on the same line.
    comp = aot_compile(records[0], "sm_90")
    assert isinstance(comp, SourceError) and comp.kind == "CompilationError"
    assert comp.line == err.line


def test_message_is_trimmed_to_the_end(tmp_path):
    path = tmp_path / "candidate.py"
    path.write_text("x = 1\n")
    try:
        raise ValueError("\n".join(f"detail {i}" for i in range(200)) + "\nFINAL")
    except ValueError as exc:
        err = map_exception(exc, path)
    assert err.line is None
    assert err.message.endswith("FINAL")
    assert len(err.message.splitlines()) <= 30 and len(err.message) <= 2000


def test_syntax_error_line(tmp_path):
    path = tmp_path / "candidate.py"
    path.write_text(
        textwrap.dedent("""\
        import triton

        def forward(x):
            return x +
        """)
    )
    with pytest.raises(SyntaxError) as info:
        _import(tmp_path, path.read_text())
    err = map_exception(info.value, path)
    assert err.kind == "SyntaxError" and err.line == 4


def test_worker_interpreter_then_aot_in_fresh_process(tmp_path):
    path = tmp_path / "candidate.py"
    path.write_text(SOFTMAX)
    env = dict(
        os.environ,
        TRITON_INTERPRET="1",
        TRITON_CACHE_DIR=str(tmp_path / "cache"),
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = last_json_line(proc.stdout)
    assert result["interpreted"] == "InterpretedFunction"
    assert result["ok_before"] and result["ok_after"]
    assert result["errors"] == []
    (res,) = result["resources"]
    assert res["name"] == "_row_kernel" and res["registers"] > 0 and res["spills_bytes"] == 0


def test_ptxas_error_maps_to_the_asm_line(tmp_path):
    module, path = _import(tmp_path, ASM_AND_SMEM)
    record = _record(
        module.asm_kernel, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128}
    )
    err = aot_compile(record, "sm_90")
    assert isinstance(err, SourceError), err
    assert err.kind == "ptxas"
    assert err.line == _line_of(path, "bogus.op.f32")
    assert "bogus" in err.message and "Repro command" not in err.message


def test_shared_memory_over_the_target_limit(tmp_path):
    module, path = _import(tmp_path, ASM_AND_SMEM)
    signature = {
        "a_ptr": "*fp16",
        "b_ptr": "*fp16",
        "c_ptr": "*fp32",
        "K": "i32",
        "BM": "constexpr",
        "BN": "constexpr",
        "BK": "constexpr",
    }
    record = _record(
        module.dot_kernel, signature, {"BM": 128, "BN": 256, "BK": 128}, num_warps=8, num_stages=4
    )
    # Up to 4 stages x (128x128 + 128x256) fp16 = 384 KiB > 227 KiB on H100.
    err = aot_compile(record, "sm_90")
    assert isinstance(err, SourceError), err
    assert err.kind == "OutOfResources" and "shared memory" in err.message
    assert err.line == _line_of(path, "def dot_kernel")


TUNED = (
    HEADER
    + """

@triton.autotune(
    configs=[triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4)],
    key=["n"],
)
@triton.jit
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
"""
)


def test_multi_config_autotune_runs_first_config_under_interpreter(tmp_path, interpret):
    module, _ = _import(tmp_path, TUNED)
    x = torch.zeros(1000)
    with record_launches() as records:
        module.tuned_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, 1000)
    assert bool((x == 1.0).all())
    (record,) = records
    assert (record.name, record.constexprs, record.num_warps) == ("tuned_kernel", {"BLOCK": 128}, 2)


@pytest.mark.gpu
def test_native_launches_recorded_and_aot_matches_the_jit(tmp_path):
    module, _ = _import(tmp_path, ADD + "\n" + BROKEN.replace(HEADER, ""))
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    big = torch.randn(64 * 256, device="cuda")
    with record_launches() as records:
        out = module.ModelNew()(x, y)
        module.spill_kernel[(1,)](big, torch.empty_like(big), R=64, C=256, num_warps=1)
    torch.testing.assert_close(out, (2 * x + y) * 0.5)
    assert [r.name for r in records] == ["add_kernel", "scale_kernel", "spill_kernel"]
    major, minor = torch.cuda.get_device_capability()
    for record in records:
        (compiled,) = record.fn.device_caches[torch.cuda.current_device()][0].values()
        compiled._init_handles()
        res = aot_compile(record, f"sm_{major}{minor}")
        assert isinstance(res, KernelResources), res
        assert res.registers == compiled.n_regs
        assert res.shared_bytes == compiled.metadata.shared
        assert (res.spills_bytes > 0) == (compiled.n_spills > 0)
