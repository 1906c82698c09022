"""From the Triton interpreter's kernels to real `JITFunction`s the compiler can see.

Under `TRITON_INTERPRET=1` kernels (and `triton.language`'s own `@triton.jit` helpers) are
interpreter objects; compiling one for a real target needs the `JITFunction` it would have been
(`as_jit`), and `triton.language` as it is without the interpreter for the duration of the
compile (`compilable_language`). Importing this module takes a snapshot of `triton.language`
(to undo the interpreter's leaked patches): import it before any kernel runs.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Iterator
from typing import Any

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


def as_jit(kernel: Any) -> Any:
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
            scope[name] = as_jit(value)
    return jit


def unwrapped(kernel: Any) -> Any:
    """The JITFunction/InterpretedFunction under autotuner and heuristics wrappers."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    while not isinstance(kernel, JITFunction | InterpretedFunction) and hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel


def _convert_helper(value: Any) -> Any:
    from triton.runtime.interpreter import InterpretedFunction

    return as_jit(value) if isinstance(value, InterpretedFunction) else value


@contextlib.contextmanager
def compilable_language(kernel: Any = None) -> Iterator[None]:
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
                    setattr(module, attr, as_jit(value))
        for attr, value in list(vars(tl.core.tensor).items()):
            target = _forwarded_interpreted(value)
            if target is not None:
                changes.append((tl.core.tensor, attr, value))
                setattr(tl.core.tensor, attr, as_jit(target))
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


_LANG_SNAPSHOT = _snapshot_language()
