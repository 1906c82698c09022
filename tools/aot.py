"""Launch recording, ahead-of-time compilation for a real CUDA target, and error mapping.

Three jobs, all for a worker process that has imported a candidate file:

- `record_launches()` watches `kernel[grid](...)` calls (native `JITFunction` or the interpreter's
  `InterpretedFunction`, also behind `@triton.autotune` / `@triton.heuristics`) and keeps one
  `LaunchRecord` per launch: the kernel, its Triton signature, constexpr values and launch options.
- `aot_compile(record, "sm_90")` compiles a recorded kernel with `triton.compile` for a real
  `GPUTarget`, which needs no GPU, and asks `ptxas -v` for registers and spills. A kernel that
  runs under the interpreter on a CPU still gets the real compiler's verdict this way.
- `map_exception(exc, candidate_path)` turns a Triton compile error, an interpreter error or an
  ordinary traceback into a `SourceError` whose line is a line of the candidate file.

Patching and compiling touch process-global Triton state: use from one thread at a time (a
worker runs one job).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import io
import linecache
import os
import re
import subprocess
import tempfile
import traceback
import types
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.results import KernelResources, SourceError

__all__ = [
    "LaunchRecord",
    "aot_compile",
    "aot_compile_all",
    "map_exception",
    "parse_target",
    "record_launches",
]

# CUDAOptions defaults, used when a launch does not say.
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
# Launch options other than num_warps/num_stages that change the compiled code, with the
# defaults that need not be recorded.
_PASSED_OPTIONS = {
    "num_ctas": 1,
    "maxnreg": None,
    "enable_fp_fusion": None,
    "launch_cooperative_grid": False,
    "launch_pdl": False,
}

MAX_MESSAGE_LINES = 30
MAX_MESSAGE_CHARS = 2000
PTXAS_TIMEOUT_S = 120

# Largest shared memory one block may use (opt-in limit, bytes), by compute capability. A kernel
# that needs more compiles but fails at launch with OutOfResources.
_SHARED_LIMITS = {
    70: 98304,
    75: 65536,
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    103: 232448,
    120: 101376,
}
_TARGET_ALIASES = {
    "v100": 70,
    "t4": 75,
    "a100": 80,
    "a10": 86,
    "a10g": 86,
    "l4": 89,
    "l40s": 89,
    "rtx4090": 89,
    "h100": 90,
    "h200": 90,
    "gh200": 90,
    "b200": 100,
    "gb200": 100,
}


@dataclass(kw_only=True)
class LaunchRecord:
    """One observed `kernel[grid](...)` launch, enough to compile that kernel again."""

    name: str
    """The kernel function's name."""
    fn: Any = field(default=None, repr=False, compare=False)
    """The `JITFunction` or `InterpretedFunction`; not serialised."""
    signature: dict[str, str] = field(default_factory=dict)
    """Argument name -> Triton type: `*fp32`, `i32`, `i64`, `fp32`, `u1`, `constexpr`, ..."""
    constexprs: dict[str, Any] = field(default_factory=dict)
    """Values of the arguments typed `constexpr` (annotated, or specialised like `1` and `None`)."""
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int = DEFAULT_NUM_STAGES
    grid: tuple[int, ...] | None = None
    """The launch grid, resolved when it was a callable; None when it could not be."""
    file: str | None = None
    first_line: int | None = None
    """1-based line of the kernel's `def` in `file`."""
    aligned: list[str] = field(default_factory=list)
    """Arguments the runtime specialises as multiples of 16 (16-byte aligned pointers, ints)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Other launch options that change the code: num_ctas, maxnreg, enable_fp_fusion, ..."""
    autotuning: bool = False
    """True for launches made by `@triton.autotune` while it benchmarks configs."""

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: _jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name != "fn"
        }


# ---------------------------------------------------------------------------------------------
# Launch recording


_AUTOTUNING: contextvars.ContextVar[bool] = contextvars.ContextVar("_AUTOTUNING", default=False)


@contextlib.contextmanager
def record_launches() -> Iterator[list[LaunchRecord]]:
    """Record every Triton kernel launch made inside the block.

    Patches `JITFunction.run` and `InterpretedFunction.run` (what `kernel[grid](...)` calls,
    directly or through an autotuner/heuristics wrapper), records the launch, then calls the
    original. A launch is recorded before it runs, so a kernel that fails still has its record.
    Recording never raises: a launch whose arguments cannot be read is left to fail on its own.

    On a GPU, `@triton.autotune` benchmark launches are recorded too, with `autotuning=True`.
    Under the interpreter, where benchmarking cannot run, the autotuner is told every config
    takes the same time, so it runs its first config instead of failing.
    """
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    records: list[LaunchRecord] = []
    originals = [
        (JITFunction, "run", JITFunction.__dict__["run"]),
        (InterpretedFunction, "run", InterpretedFunction.__dict__["run"]),
        (Autotuner, "_bench", Autotuner.__dict__["_bench"]),
    ]

    def recording_run(original):
        @functools.wraps(original)
        def run(self, *args, **kwargs):
            if not kwargs.get("warmup", False):
                record = _make_record(self, args, kwargs)
                if record is not None:
                    records.append(record)
            return original(self, *args, **kwargs)

        return run

    def flagging_bench(original):
        @functools.wraps(original)
        def _bench(self, *args, **kwargs):
            if _is_interpreted(self):
                # Interpreter timings mean nothing and benchmarking needs a GPU driver: call
                # every config equally fast, so the autotuner runs its first (pruned) config.
                return [0.0, 0.0, 0.0]
            token = _AUTOTUNING.set(True)
            try:
                return original(self, *args, **kwargs)
            finally:
                _AUTOTUNING.reset(token)

        return _bench

    JITFunction.run = recording_run(originals[0][2])
    InterpretedFunction.run = recording_run(originals[1][2])
    Autotuner._bench = flagging_bench(originals[2][2])
    try:
        yield records
    finally:
        for cls, name, original in originals:
            setattr(cls, name, original)


def _def_line(jit: Any) -> int | None:
    """1-based line of the kernel's `def` (Triton < 3.9 has no `def_file_line_number`)."""
    line = getattr(jit, "def_file_line_number", None)
    if line is not None:
        return line
    try:
        lines, start = inspect.getsourcelines(jit.fn)
    except (OSError, TypeError):
        return None
    for i, text in enumerate(lines):
        if re.match(r"\s*def\s", text):
            return start + i
    return start


def _file_name(jit: Any) -> str | None:
    return (
        getattr(jit, "file_name", None)
        or getattr(jit.fn, "__code__", None)
        and jit.fn.__code__.co_filename
    )


def _is_interpreted(kernel: Any) -> bool:
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_unwrapped(kernel), InterpretedFunction)


def _make_record(kernel: Any, args: tuple, kwargs: dict) -> LaunchRecord | None:
    try:
        jit = _as_jit(kernel)
        kwargs = dict(kwargs)
        grid = kwargs.pop("grid", None)
        kwargs.pop("warmup", None)
        try:
            bound, specialization, options = _binder(jit)(*args, **kwargs)
        except Exception:
            bound, specialization, options = _specialize_by_hand(jit, args, kwargs)
    except Exception:
        return None
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    aligned: list[str] = []
    for param, (ty, spec) in zip(jit.params, specialization, strict=True):
        signature[param.name] = ty
        if ty == "constexpr":
            constexprs[param.name] = bound[param.name]
        elif isinstance(spec, str) and "D" in spec:
            aligned.append(param.name)
    return LaunchRecord(
        name=jit.__name__,
        fn=kernel,
        signature=signature,
        constexprs=constexprs,
        num_warps=int(options.get("num_warps") or DEFAULT_NUM_WARPS),
        num_stages=int(options.get("num_stages") or DEFAULT_NUM_STAGES),
        grid=_resolve_grid(grid, bound),
        file=_file_name(jit),
        first_line=_def_line(jit),
        aligned=aligned,
        options={
            k: v
            for k, v in options.items()
            if k in _PASSED_OPTIONS and v is not None and v != _PASSED_OPTIONS[k]
        },
        autotuning=_AUTOTUNING.get(),
    )


def _resolve_grid(grid: Any, bound: dict[str, Any]) -> tuple[int, ...] | None:
    try:
        if callable(grid):
            grid = grid(bound)
        if isinstance(grid, int):
            grid = (grid,)
        return tuple(int(g) for g in grid)
    except Exception:
        return None


_BINDERS: dict[int, tuple[Any, Any]] = {}


def _binder(jit: Any) -> Any:
    """Triton's own argument binder for `jit` (what the runtime uses to specialise a launch)."""
    cached = _BINDERS.get(id(jit))
    if cached is not None and cached[0] is jit:
        return cached[1]
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", 90, 32))
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    _BINDERS[id(jit)] = (jit, binder)
    return binder


_TORCH_TO_TRITON = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "bool": "u1",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}


def _specialize_by_hand(jit: Any, args: tuple, kwargs: dict) -> tuple[dict, list, dict]:
    """What Triton's binder returns, for Triton versions whose binder we cannot call."""
    names = [p.name for p in jit.params]
    options = {k: v for k, v in kwargs.items() if k not in names}
    call = inspect.signature(jit.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in names})
    call.apply_defaults()
    bound = dict(call.arguments)
    specialization = []
    for param in jit.params:
        value = bound[param.name]
        if (
            param.is_constexpr
            or value is None
            or (isinstance(value, int) and value == 1 and not isinstance(value, bool))
        ):
            specialization.append(("constexpr", value))
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            dtype = _TORCH_TO_TRITON.get(str(value.dtype).removeprefix("torch."), str(value.dtype))
            specialization.append(("*" + dtype, "D" if value.data_ptr() % 16 == 0 else ""))
        elif isinstance(value, bool):
            specialization.append(("u1", None))
        elif isinstance(value, int):
            ty = "i32" if -(2**31) <= value < 2**31 else "u64" if value >= 2**63 else "i64"
            aligned = value % 16 == 0 and not param.do_not_specialize
            specialization.append((ty, "D" if aligned else ""))
        elif isinstance(value, float):
            specialization.append(("fp32", None))
        else:
            raise TypeError(f"cannot type argument {param.name}={value!r}")
    return bound, specialization, options


# Python function -> JITFunction built from it (for kernels defined under the interpreter).
_JIT_FROM_PY: dict[Any, Any] = {}
_JIT_KWARGS = (
    "version",
    "do_not_specialize",
    "do_not_specialize_on_alignment",
    "debug",
    "noinline",
    "repr",
    "launch_metadata",
)


def _as_jit(kernel: Any) -> Any:
    """The `triton.runtime.jit.JITFunction` behind a kernel object.

    Unwraps autotuner/heuristics wrappers. Under `TRITON_INTERPRET=1` kernels are
    `InterpretedFunction`s; a real `JITFunction` is built from the Python function, with
    `@triton.jit` helpers it calls (globals or closure cells) converted the same way, so that the
    real compiler can see them.
    """
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction | InterpretedFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    if isinstance(kernel, JITFunction):
        return kernel
    if not isinstance(kernel, InterpretedFunction):
        raise TypeError(f"not a Triton kernel: {kernel!r}")
    pyfn = kernel.fn
    if pyfn in _JIT_FROM_PY:
        return _JIT_FROM_PY[pyfn]

    scope = dict(pyfn.__globals__)
    closure = None
    if pyfn.__closure__:
        closure = tuple(types.CellType(_convert_helper(c.cell_contents)) for c in pyfn.__closure__)
    clone = types.FunctionType(pyfn.__code__, scope, pyfn.__name__, pyfn.__defaults__, closure)
    clone.__kwdefaults__ = pyfn.__kwdefaults__
    clone.__annotations__ = pyfn.__annotations__
    clone.__qualname__ = pyfn.__qualname__
    clone.__module__ = pyfn.__module__
    clone.__doc__ = pyfn.__doc__
    jit_kwargs = {k: v for k, v in kernel.kwargs.items() if k in _JIT_KWARGS}
    jit = JITFunction(clone, **jit_kwargs)
    _JIT_FROM_PY[pyfn] = jit  # before converting helpers: they may call back into this kernel
    for name, value in scope.items():
        if isinstance(value, InterpretedFunction):
            scope[name] = _as_jit(value)
    return jit


def _unwrapped(kernel: Any) -> Any:
    """The JITFunction/InterpretedFunction under autotuner and heuristics wrappers."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction | InterpretedFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


def _convert_helper(value: Any) -> Any:
    from triton.runtime.interpreter import InterpretedFunction

    return _as_jit(value) if isinstance(value, InterpretedFunction) else value


@contextlib.contextmanager
def _compilable_language(kernel: Any = None) -> Iterator[None]:
    """Let the real compiler see `triton.language` as it is without the interpreter.

    When `TRITON_INTERPRET=1` was set as Triton was imported, the standard library's
    `@triton.jit` functions (`tl.sum`, `tl.max`, `tl.cdiv`, `tl.softmax`, `tl.rand`, ...) and the
    tensor methods forwarding to them (`x.sum()`) are interpreter objects, which the code
    generator would call as plain Python. For the duration of a compile they are swapped for real
    `JITFunction`s, then put back so the interpreter keeps working. The same goes for modules the
    kernel reaches through its globals (Inductor's `triton_helpers.maximum`, ...).
    """
    import sys

    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    _undo_leaked_interpreter_patches()
    changes: list[tuple[Any, str, Any]] = []
    try:
        modules = [
            module
            for name, module in list(sys.modules.items())
            if module is not None
            and (name == "triton.language" or name.startswith("triton.language."))
        ]
        pyfn = getattr(kernel, "fn", None)
        for value in getattr(pyfn, "__globals__", {}).values():
            if isinstance(value, types.ModuleType) and all(value is not m for m in modules):
                modules.append(value)
        for module in modules:
            for attr, value in list(vars(module).items()):
                if isinstance(value, InterpretedFunction):
                    changes.append((module, attr, value))
                    setattr(module, attr, _as_jit(value))
        for attr, value in list(vars(tl.core.tensor).items()):
            target = _forwarded_interpreted(value)
            if target is not None:
                changes.append((tl.core.tensor, attr, value))
                setattr(tl.core.tensor, attr, _as_jit(target))
        yield
    finally:
        for owner, attr, value in reversed(changes):
            setattr(owner, attr, value)


# The interpreter patches `triton.language` while it runs a kernel and undoes it afterwards, except
# when a kernel calls a library `@triton.jit` function (`tl.max`, `tl.sigmoid`, ...): those
# patches (on `tl.core` and friends) are never undone (Triton 3.9), and the real compiler then
# calls interpreter code. A snapshot taken when this module is imported says what to restore.
_MISSING = object()


def _lang_owners() -> list[Any]:
    import triton.language as tl

    core = tl.core
    owners = [tl, core, tl.math, core.tensor, core.dtype]
    owners += [
        getattr(core, n) for n in ("condition", "tensor_descriptor_base") if hasattr(core, n)
    ]
    return owners


def _snapshot_language() -> dict[tuple[int, str], Any]:
    return {
        (id(owner), attr): value for owner in _lang_owners() for attr, value in vars(owner).items()
    }


def _made_by_interpreter(value: Any, attr: str = "") -> bool:
    from triton.runtime import interpreter

    if attr == "static_print" and value is print:
        return True
    fn = value.fget if isinstance(value, property) else value
    fn = fn.func if isinstance(fn, functools.partial) else fn
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename == interpreter.__file__


def _unwrap_patched(value: Any) -> Any:
    """What an interpreter `_patch_attr` lambda wraps (it keeps it as its `member` default)."""
    while _made_by_interpreter(value) and "member" in (
        getattr(value, "__kwdefaults__", None) or {}
    ):
        value = value.__kwdefaults__["member"]
    return value


def _undo_leaked_interpreter_patches() -> None:
    for owner in _lang_owners():
        for attr, value in list(vars(owner).items()):
            if not _made_by_interpreter(value, attr):
                continue
            original = _unwrap_patched(_LANG_SNAPSHOT.get((id(owner), attr), _MISSING))
            if original is not _MISSING and not _made_by_interpreter(original, attr):
                setattr(owner, attr, original)
            elif not _made_by_interpreter(_unwrap_patched(value), attr):
                setattr(owner, attr, _unwrap_patched(value))
            elif original is _MISSING and isinstance(owner, type):
                delattr(owner, attr)  # added on the class, e.g. tensor.__repr__


def _forwarded_interpreted(value: Any) -> Any:
    """The InterpretedFunction a `_tensor_member_fn` wrapper forwards to, if any."""
    from triton.runtime.interpreter import InterpretedFunction

    if isinstance(value, InterpretedFunction):
        return value
    for cell in getattr(value, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:
            continue
        if isinstance(contents, InterpretedFunction):
            return contents
    return None


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation


def parse_target(target: str | int) -> tuple[str, int]:
    """`"sm_90"`, `"sm_90a"`, `"90"`, `90`, `"h100"` -> `("sm_90", 90)`."""
    if isinstance(target, int):
        return f"sm_{target}", target
    text = str(target).strip().lower()
    if text in _TARGET_ALIASES:
        cap = _TARGET_ALIASES[text]
        return f"sm_{cap}", cap
    match = re.fullmatch(r"(?:sm_?|cuda:|compute_)?(\d{2,3})a?", text)
    if not match:
        raise ValueError(
            f"unknown CUDA target {target!r}; expected e.g. 'sm_90', 'sm_80', 'sm_100'"
        )
    cap = int(match.group(1))
    return f"sm_{cap}", cap


_COMPILED: dict[tuple, KernelResources | SourceError] = {}


def aot_compile(record: LaunchRecord, target: str | int = "sm_90") -> KernelResources | SourceError:
    """Compile the recorded kernel for a real CUDA target; registers, spills, shared memory.

    Works without a GPU. Results are cached in-process by kernel source, signature, constexprs,
    options and target, so a kernel launched many times compiles once. A compiler error comes back
    as a `SourceError` located in the kernel's file (kind `CompilationError`, `ptxas`,
    `OutOfResources`, ...), never raised.
    """
    target_name, cap = parse_target(target)
    with _compilable_language(_unwrapped(record.fn)):
        try:
            jit = _as_jit(record.fn)
            if record.file is None or record.first_line is None:
                record = dataclasses.replace(
                    record,
                    file=record.file or _file_name(jit),
                    first_line=record.first_line or _def_line(jit),
                )
            key = _cache_key(record, jit, cap)
        except Exception as exc:
            return _located(map_exception(exc, record.file or ""), record)
        if key not in _COMPILED:
            _COMPILED[key] = _compile(record, jit, target_name, cap)
    return dataclasses.replace(_COMPILED[key])


def aot_compile_all(
    records: Iterable[LaunchRecord], target: str | int = "sm_90"
) -> tuple[list[KernelResources], list[SourceError]]:
    """Compile each distinct (kernel, specialisation) once; resources and errors, in launch order."""
    resources: list[KernelResources] = []
    errors: list[SourceError] = []
    seen: set = set()
    _, cap = parse_target(target)
    for record in records:
        try:
            with _compilable_language(_unwrapped(record.fn)):
                key = _cache_key(record, _as_jit(record.fn), cap)
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
            code=_source_line(record.file, record.first_line),
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
            error.code = _source_line(record.file, error.line)
        return _located(error, record)

    shared = int(getattr(compiled.metadata, "shared", 0) or 0)
    limit = _SHARED_LIMITS.get(cap)
    if limit is not None and shared > limit:
        return SourceError(
            kind="OutOfResources",
            message=(
                f"kernel `{record.name}` needs {shared} bytes of shared memory per block; "
                f"{target_name} allows at most {limit}. Reduce the block sizes or num_stages."
            ),
            line=record.first_line,
            code=_source_line(record.file, record.first_line),
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
        constexprs={k: _jsonable(v) for k, v in record.constexprs.items()},
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
            files[found.group(1)] = _real(name)
    for line in reversed(ptx[: int(match.group(1))]):
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
        if loc and files.get(loc.group(1)) == _real(path) and int(loc.group(2)) > 0:
            return int(loc.group(2))
    return None


def _located(error: SourceError, record: LaunchRecord) -> SourceError:
    """Point an error that has no line of its own at the kernel's `def`."""
    if error.line is None and record.first_line is not None:
        error.line = record.first_line
        error.code = _source_line(record.file, record.first_line)
    return error


# ---------------------------------------------------------------------------------------------
# Mapping exceptions to candidate-file lines


def map_exception(exc: BaseException, candidate_path: str | os.PathLike) -> SourceError:
    """A `SourceError` for `exc`, located at the deepest point in the candidate file.

    Handles Triton `CompilationError`s (whose positions are relative to the kernel function),
    `PTXASError`s, interpreter errors (the kernel body runs as rewritten Python whose frames carry
    candidate-file lines), syntax errors and ordinary tracebacks. The message keeps only frames in
    the candidate file and the final error, within ~30 lines / 2000 characters.
    """
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import PTXASError

    path = _real(candidate_path)
    chain = _exception_chain(exc)
    compile_errors = [e for e in chain if isinstance(e, CompilationError)]
    if compile_errors:
        return _map_compilation_error(compile_errors, chain, path)
    ptxas = next((e for e in chain if isinstance(e, PTXASError)), None)
    if ptxas is not None:
        return SourceError(kind="ptxas", message=_trim(_ptxas_message(ptxas)))
    return _map_traceback(exc, chain, path)


def _exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first (explicit causes, else unsuppressed context)."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        if exc.__cause__ is not None:
            exc = exc.__cause__
        elif not exc.__suppress_context__:
            exc = exc.__context__
        else:
            break
    return chain


def _map_compilation_error(errors: list, chain: list[BaseException], path: str) -> SourceError:
    """Triton reports `lineno` relative to the kernel's source (which starts at `def`)."""
    located = []  # (error, file line, column), outermost first
    for err in errors:
        node = getattr(err, "node", None)
        def_line = _find_def_line(getattr(err, "src", None), path)
        if def_line is not None and getattr(node, "lineno", None) is not None:
            located.append((err, def_line + node.lineno - 1, getattr(node, "col_offset", 0)))
    innermost = errors[-1]
    text = innermost.error_message
    if not text:
        deeper = chain[chain.index(innermost) + 1 :]
        text = _final_line(deeper[0]) if deeper else str(innermost)
    kind = type(innermost).__name__
    if not located:
        return SourceError(kind=kind, message=_trim(f"{str(innermost)}"))

    err, line, col = located[-1]
    code = _source_line(path, line)
    raw = linecache.getline(path, line).rstrip("\n")
    lines = [f"line {line}:", raw, " " * col + "^", text]
    for _, call_line, _ in reversed(located[:-1]):
        lines.append(
            f"(in a function called at line {call_line}: "
            f"{(_source_line(path, call_line) or '').strip()})"
        )
    return SourceError(kind=kind, message=_trim("\n".join(lines)), line=line, code=code)


def _find_def_line(src: str | None, path: str) -> int | None:
    """1-based line in `path` where a function whose (dedented) source is `src` starts."""
    if not src or not path:
        return None
    wanted = [ln.strip() for ln in src.splitlines() if ln.strip()]
    if not wanted:
        return None
    file_lines = linecache.getlines(path)
    for i, line in enumerate(file_lines):
        if line.strip() != wanted[0]:
            continue
        body = [ln.strip() for ln in file_lines[i : i + 4 * len(wanted)] if ln.strip()]
        if body[: len(wanted)] == wanted:
            return i + 1
    return None


def _map_traceback(exc: BaseException, chain: list[BaseException], path: str) -> SourceError:
    from triton.runtime.errors import InterpreterError

    # The interpreter wraps what the kernel body raised: report the original.
    primary = exc
    while isinstance(primary, InterpreterError) and primary.__cause__ is not None:
        primary = primary.__cause__
    line: int | None = None
    frames: list[tuple[int, str, str]] = []  # (line, function, code) in the candidate file
    for err in chain:
        if err is not exc and err is not primary and not isinstance(err, InterpreterError):
            continue
        for fs in traceback.extract_tb(err.__traceback__):
            if fs.lineno is not None and _real(fs.filename) == path:
                frame = (fs.lineno, fs.name, (fs.line or "").strip())
                if frame not in frames:
                    frames.append(frame)
    if isinstance(primary, SyntaxError) and primary.filename and _real(primary.filename) == path:
        line = primary.lineno
    elif frames:
        line = frames[-1][0]

    body = ["Traceback (candidate file only):"] if frames else []
    for lineno, name, code in frames:
        body.append(f"  line {lineno}, in {name}")
        if code:
            body.append(f"    {code}")
    final = _final_line(primary)
    if primary is not exc:
        final += "\n(raised while the Triton interpreter ran the kernel)"
    message = _trim("\n".join(body + [final]))
    return SourceError(
        kind=type(primary).__name__, message=message, line=line, code=_source_line(path, line)
    )


def _final_line(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _ptxas_message(exc: BaseException) -> str:
    """The ptxas diagnostics, without Triton's temp-file paths and repro command."""
    text = getattr(exc, "error_message", None) or str(exc)
    keep = ["ptxas rejected the PTX generated for this kernel:"]
    for line in text.splitlines():
        if (
            not line.strip()
            or line.startswith(("Repro command", "Internal Triton PTX codegen"))
            or line.strip() == "`ptxas` stderr:"
        ):
            continue
        keep.append(re.sub(r"^\S*ptxas\S*\s+/\S+\.ptx, line", "PTX line", line))
    return "\n".join(keep)


def _trim(text: str, max_lines: int = MAX_MESSAGE_LINES, max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """Keep the end (where the error is): the last lines, then the last characters."""
    lines = text.rstrip().splitlines()
    if len(lines) > max_lines:
        lines = ["..."] + lines[-(max_lines - 1) :]
    text = "\n".join(lines)
    if len(text) > max_chars:
        text = "..." + text[-(max_chars - 3) :]
    return text


def _source_line(path: str | None, line: int | None) -> str | None:
    if not path or not line:
        return None
    text = linecache.getline(str(path), line)
    return text.rstrip("\n") or None


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(path)) if path else ""


# ---------------------------------------------------------------------------------------------
# Helpers


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


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


_LANG_SNAPSHOT = _snapshot_language()
