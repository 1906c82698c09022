"""Ahead-of-time compilation for a real CUDA target, for a worker process that recorded the
kernel launches of a candidate file (`tools.compile.launch_record`).

`aot_compile(record, "sm_90")` compiles a recorded kernel with `triton.compile` for a real
`GPUTarget`, which needs no GPU, and asks `ptxas -v` for registers and spills. A kernel that runs
under the interpreter on a CPU still gets the real compiler's verdict this way; its errors are
located in the candidate file by `tools.compile.error_map`.

Patching and compiling touch process-global Triton state: use from one thread at a time (a
worker runs one job).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import subprocess
import tempfile
import warnings
from collections.abc import Iterable
from typing import Any

from tools.compile.cuda_targets import DEFAULT_TARGET, SHARED_MEMORY_LIMITS, parse_target
from tools.compile.error_map import map_exception, real_path, source_line
from tools.compile.jit_bridge import as_jit, compilable_language, unwrapped
from tools.compile.launch_record import LaunchRecord, def_line, file_name, jsonable, record_launches
from tools.core.results import KernelResources, SourceError

__all__ = [
    "LaunchRecord",
    "aot_compile",
    "aot_compile_all",
    "map_exception",
    "parse_target",
    "record_launches",
]


PTXAS_TIMEOUT_S = 120


_COMPILED: dict[tuple, KernelResources | SourceError] = {}


def aot_compile(
    record: LaunchRecord, target: str | int = DEFAULT_TARGET
) -> KernelResources | SourceError:
    """Compile the recorded kernel for a real CUDA target; registers, spills, shared memory.

    Works without a GPU. Results are cached in-process by kernel source, signature, constexprs,
    options and target, so a kernel launched many times compiles once. A compiler error comes back
    as a `SourceError` located in the kernel's file (kind `CompilationError`, `ptxas`,
    `OutOfResources`, ...), never raised.
    """
    target_name, cap = parse_target(target)
    with compilable_language(unwrapped(record.fn)):
        try:
            jit = as_jit(record.fn)
            if record.file is None or record.first_line is None:
                record = dataclasses.replace(
                    record,
                    file=record.file or file_name(jit),
                    first_line=record.first_line or def_line(jit),
                )
            key = _cache_key(record, jit, cap)
        except Exception as exc:
            return _located(map_exception(exc, record.file or ""), record)
        if key not in _COMPILED:
            _COMPILED[key] = _compile(record, jit, target_name, cap)
    return dataclasses.replace(_COMPILED[key])


def aot_compile_all(
    records: Iterable[LaunchRecord], target: str | int = DEFAULT_TARGET
) -> tuple[list[KernelResources], list[SourceError]]:
    """Compile each distinct (kernel, specialisation) once; resources and errors, in launch order.

    A network's forward launches the same few kernels hundreds of times (every trial, every
    run): launches of one kernel object with one specialisation are told apart by `_launch_key`
    (no compiler state touched) before the compile key, whose `compilable_language` swap costs
    ~8 ms a call (0.8 s of this function's 3.3 s for 48 launches of 4 kernels at N=4,
    benchmarks/results/cpu/depth_scaling)."""
    resources: list[KernelResources] = []
    errors: list[SourceError] = []
    seen: set = set()
    launched: set = set()
    _, cap = parse_target(target)
    for record in records:
        cheap = _launch_key(record)
        if cheap is not None:
            if cheap in launched:
                continue
            launched.add(cheap)
        try:
            with compilable_language(unwrapped(record.fn)):
                key = _cache_key(record, as_jit(record.fn), cap)
        except Exception:
            key = ("unkeyed", record.name, record.file, record.first_line)
        if key in seen:
            continue
        seen.add(key)
        result = aot_compile(record, target)
        if isinstance(result, SourceError):
            if result not in errors:
                errors.append(result)
        else:
            resources.append(result)
    return resources, errors


def _launch_key(record: LaunchRecord) -> tuple | None:
    """What makes two launches one compile, short of the kernel's source: the same function
    object (kept alive by the records, so its id is not reused) with the same specialisation
    and options. None when a value cannot be keyed."""
    if record.fn is None:
        return None
    try:
        key = (
            id(record.fn),
            tuple(sorted(record.signature.items())),
            _freeze(record.constexprs),
            tuple(sorted(record.aligned)),
            record.num_warps,
            record.num_stages,
            _freeze(record.options),
        )
        hash(key)
    except TypeError:
        return None
    return key


def _cache_key(record: LaunchRecord, jit: Any, cap: int) -> tuple:
    return (
        jit.cache_key,
        tuple(sorted(record.signature.items())),
        _freeze(record.constexprs),
        tuple(sorted(record.aligned)),
        record.num_warps,
        record.num_stages,
        _freeze(record.options),
        cap,
    )


def _compile(
    record: LaunchRecord, jit: Any, target_name: str, cap: int
) -> KernelResources | SourceError:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(jit.arg_names)
    try:
        signature = {name: record.signature[name] for name in names}
    except KeyError as missing:
        return SourceError(
            kind="SignatureError",
            message=f"no type recorded for argument {missing}",
            line=record.first_line,
            code=source_line(record.file, record.first_line),
        )
    constants = {(names.index(k),): v for k, v in record.constexprs.items() if k in names}
    attrs = {(names.index(k),): [["tt.divisibility", 16]] for k in record.aligned if k in names}
    options = {"num_warps": record.num_warps, "num_stages": record.num_stages, **record.options}
    # make_cubin prints the PTX and a reproducer to stdout when ptxas fails; keep stdout clean.
    printed = io.StringIO()
    try:
        src = ASTSource(fn=jit, signature=signature, constexprs=constants, attrs=attrs)
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION")
            compiled = triton.compile(src, target=GPUTarget("cuda", cap, 32), options=options)
    except Exception as exc:
        error = map_exception(exc, record.file or "")
        if error.kind == "ptxas" and record.file:
            error.line = _ptx_error_source_line(error.message, printed.getvalue(), record.file)
            error.code = source_line(record.file, error.line)
        return _located(error, record)

    shared = int(getattr(compiled.metadata, "shared", 0) or 0)
    limit = SHARED_MEMORY_LIMITS.get(cap)
    if limit is not None and shared > limit:
        return SourceError(
            kind="OutOfResources",
            message=(
                f"kernel `{record.name}` needs {shared} bytes of shared memory per block; "
                f"{target_name} allows at most {limit}. Reduce the block sizes or num_stages."
            ),
            line=record.first_line,
            code=source_line(record.file, record.first_line),
        )
    fp_fusion = bool(getattr(compiled.metadata, "enable_fp_fusion", True))
    registers, spills = _ptxas_usage(
        compiled.asm.get("ptx", ""), cap, compiled.metadata.name, fp_fusion
    )
    return KernelResources(
        name=record.name,
        target=target_name,
        registers=registers,
        spills_bytes=spills,
        shared_bytes=shared,
        num_warps=record.num_warps,
        num_stages=record.num_stages,
        constexprs={k: jsonable(v) for k, v in record.constexprs.items()},
    )


def _ptxas_usage(ptx: str, cap: int, entry: str, fp_fusion: bool) -> tuple[int | None, int | None]:
    """(registers, spill-store bytes) from `ptxas -v`, with the flags Triton compiles with."""
    if not ptx:
        return None, None
    from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

    with tempfile.TemporaryDirectory(prefix="aot-ptxas-") as tmp:
        ptx_path = os.path.join(tmp, "kernel.ptx")
        with open(ptx_path, "w") as f:
            f.write(ptx)
        cmd = [
            get_ptxas(cap).path,
            "-v",
            "-lineinfo",
            "--regAllocOptLevel=2",
            *([] if fp_fusion else ["--fmad=false"]),
            f"--gpu-name={sm_arch_from_capability(cap)}",
            ptx_path,
            "-o",
            os.path.join(tmp, "kernel.cubin"),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PTXAS_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None, None
    return _parse_ptxas_log(proc.stdout + proc.stderr, entry)


def _parse_ptxas_log(log: str, entry: str) -> tuple[int | None, int | None]:
    start = log.find(f"entry function '{entry}'")
    section = log[start:] if start >= 0 else log
    regs = re.search(r"Used (\d+) registers", section)
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", log)]
    return (int(regs.group(1)) if regs else None), (sum(spills) if spills else None)


def _ptx_error_source_line(message: str, printed: str, path: str) -> int | None:
    """The candidate line behind the first PTX line ptxas complains about (via `.loc`)."""
    match = re.search(r"(?:\.ptx, |PTX )line (\d+)", message)
    start = printed.find("// Generated by LLVM NVPTX Back-End")
    if not match or start < 0:
        return None
    ptx = printed[printed.rfind("\n", 0, start) + 1 :].splitlines()
    files = {}
    for line in ptx:
        found = re.match(r'\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?', line)
        if found:
            name = (
                os.path.join(found.group(2), found.group(3)) if found.group(3) else found.group(2)
            )
            files[found.group(1)] = real_path(name)
    for line in reversed(ptx[: int(match.group(1))]):
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
        if loc and files.get(loc.group(1)) == real_path(path) and int(loc.group(2)) > 0:
            return int(loc.group(2))
    return None


def _located(error: SourceError, record: LaunchRecord) -> SourceError:
    """Point an error that has no line of its own at the kernel's `def`."""
    if error.line is None and record.first_line is not None:
        error.line = record.first_line
        error.code = source_line(record.file, record.first_line)
    return error


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return repr(value)
