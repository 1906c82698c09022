"""tools.aot: launch recording, AOT compilation for sm_90 without a GPU, error -> file line.

Candidates are written to `tmp_path` and imported with importlib, so file/line mapping is real.
Compiling needs no interpreter; recording and interpreter errors run with `TRITON_INTERPRET=1`
set before the candidate is imported (Triton reads it when `@triton.jit` runs).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tools.aot import (
    LaunchRecord,
    aot_compile,
    aot_compile_all,
    map_exception,
    parse_target,
    record_launches,
)
from tools.results import KernelResources, SourceError

_counter = itertools.count()

HEADER = """\
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

ADD = HEADER + '''

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
'''

BROKEN = HEADER + '''

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
'''

RUNTIME_ERRORS = HEADER + '''

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
'''


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
    assert add.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                             "n": "i32", "BLOCK_SIZE": "constexpr"}
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
    record = _record(module.add_kernel,
                     {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                      "BLOCK_SIZE": "constexpr"},
                     {"BLOCK_SIZE": 1024})
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
    record = _record(getattr(module, kernel), {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                     {"BLOCK": 128})
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
    record = _record(module.spill_kernel,
                     {"x_ptr": "*fp32", "out_ptr": "*fp32", "R": "constexpr", "C": "constexpr"},
                     {"R": 64, "C": 256}, num_warps=1)
    res = aot_compile(record, "sm_90")
    assert isinstance(res, KernelResources), res
    assert res.registers >= 200
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
    path.write_text(textwrap.dedent("""\
        import triton

        def forward(x):
            return x +
        """))
    with pytest.raises(SyntaxError) as info:
        _import(tmp_path, path.read_text())
    err = map_exception(info.value, path)
    assert err.kind == "SyntaxError" and err.line == 4
