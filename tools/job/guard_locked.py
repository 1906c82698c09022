"""What the guard refuses once the candidate's job is locked down (`tools.job.guard.lock_down`):
native code built in the job, raw memory read through ctypes, loaders of native code, frames and
the object graph reached from the candidate's code. Runs in the candidate's job, inside the
audit hook.
"""

from __future__ import annotations

import os
import sys

from tools.job.guard_rules import NATIVE_DENY, _deny, _state, _under

# Where a library a locked-down job loads through ctypes must not live: places the candidate can
# write (its job directory, temporary directories), i.e. native code it built itself. Installed
# libraries load (third-party packages look up libpthread and the like as they import); calling
# a native function from the candidate's own code is refused separately (ctypes.call_function).
UNTRUSTED_LIB_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


# Namespaces whose operators a candidate must not (re)implement: an `aten` kernel registered
# with a Python body runs below the dispatch audit, under the name of an op it treats as free.
PROTECTED_OP_NAMESPACES = frozenset({"aten", "prims", "prim", "_", "quantized", "rngprims"})


# Modules that load native code outside ctypes' audit events.
REFUSED_IMPORTS = frozenset({"cffi", "_cffi_backend", "cppyy", "numba", "cupy", "pycuda"})


# Audit events refused (or checked) once the candidate's job is locked down.
_LOCKED_EVENTS = frozenset(
    {
        "ctypes.dlopen",
        "ctypes.string_at",
        "ctypes.wstring_at",
        "ctypes.cdata",
        "import",
        "sys._getframe",
        "sys._current_frames",
        "ctypes.dlsym",
        "object.__getattr__",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)


# Attribute reads that hand out a frame (CPython raises `object.__getattr__` for them): from a
# traceback, a generator, a coroutine. With `sys._getframe` refused they were the other way to
# the harness's frames and, through `f_back` / `f_locals`, to its objects (the channel to the
# parent, the pristine inputs, the audit).
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "__code__"})
"""(`__code__` too: code objects rebuilt with another file name would pass for the toolchain's.)"""


_BUSY = [False]
"""Set while the guard itself looks at frames (which raises the events it is handling)."""


# Modules whose purpose is walking the stack: a frame request from them on behalf of the
# candidate's code is the candidate's.
_STACK_MODULES = (
    os.sep + "inspect.py",
    os.sep + "traceback.py",
    # logging's `currentframe` is `lambda: sys._getframe(1)` in logging/__init__.py
    os.sep + os.path.join("logging", "__init__.py"),
)


def _trusted_library(name: object) -> bool:
    if name is None:
        return True  # the process itself (ctypes.CDLL(None)); its symbols pass ctypes.dlsym
    n = os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else str(name)
    if os.sep not in n:
        return True  # by name: the dynamic loader's search path, installed libraries only
    full = os.path.realpath(n if os.path.isabs(n) else os.path.join(os.getcwd(), n))
    root = _state["root"]
    if root and (full == root or _under(full, root)):  # type: ignore[arg-type]
        return False
    if any(_under(full, d) for d in _state["lib_dirs"]):  # type: ignore[union-attr]
        return True
    return not any(full == d or _under(full, d) for d in UNTRUSTED_LIB_DIRS)


def _check_locked(event: str, args: tuple) -> None:
    if event == "ctypes.dlopen":
        name = args[0] if args else None
        if not _trusted_library(name):
            _deny(f"loading native code built in the job through ctypes ({name})")
    elif event == "ctypes.dlsym":
        name = args[1] if len(args) > 1 else ""
        if isinstance(name, bytes):
            name = name.decode(errors="replace")
        if isinstance(name, str) and (
            name in NATIVE_DENY or name.startswith(("PySys_", "_PyRuntime"))
        ):
            _deny(f"calling the native function {name}() through ctypes")
        # _caller_is_candidate <- _check_locked <- _hook <- ctypes' __getattr__ <- its caller
        if _caller_is_candidate(3):
            _deny(f"looking up the native function {name}() from the candidate's code")
    elif event in ("sys._getframe", "sys._current_frames"):
        _check_stack_walk(event)
    elif event == "object.__getattr__":
        attr = args[1] if len(args) > 1 else None
        if attr in _FRAME_ATTRIBUTES:
            _check_stack_walk(f"reading .{attr}")
    elif event.startswith("gc."):
        # the object graph: every object of the process, the harness's included
        _check_stack_walk(f"{event} (the garbage collector's object graph)")
    elif event == "import":
        name = str(args[0]) if args else ""
        if name.split(".")[0] in REFUSED_IMPORTS:
            _deny(f"importing {name} (native code outside Triton)")
    else:  # reading memory by address: tensor values to the host past every audit
        _deny(f"reading raw memory through ctypes ({event})")


def _caller_is_candidate(depth: int, busy: list = _BUSY) -> bool:
    """Whether the first Python frame from `depth` levels up that is not ctypes' own is the
    candidate's file's (ctypes looks symbols up in `CDLL.__getattr__`/`__getitem__`)."""
    target = _state["candidate_file"]
    if not target or busy[0]:
        return False
    busy[0] = True  # sys._getframe raises an audit event of its own
    try:
        frame = sys._getframe(depth)
        while frame is not None and os.sep + "ctypes" + os.sep in frame.f_code.co_filename:
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename == target
    except ValueError:
        return False
    finally:
        busy[0] = False


def _check_stack_walk(event: str, busy: list = _BUSY) -> None:
    """A kernel has no use for the call stack; a candidate walking it can behave differently
    under the verifier than in production (honest only while `candidate_job` is on the stack).
    Refused when the frame request comes from the candidate's file, directly or through
    inspect/traceback; requests by other modules (namedtuple, typing, warnings) are theirs."""
    target = _state["candidate_file"]
    if not target or busy[0]:
        return
    busy[0] = True  # sys._getframe below raises this event again
    try:
        frame = sys._getframe(3)  # _check_stack_walk <- _check_locked <- _hook <- the caller
        name = frame.f_code.co_filename
        if name == target:
            found = True
        elif name.endswith(_STACK_MODULES):
            found = False
            back = frame.f_back
            for _ in range(3):
                if back is None:
                    break
                if back.f_code.co_filename == target:
                    found = True
                    break
                if not back.f_code.co_filename.endswith(_STACK_MODULES):
                    break
                back = back.f_back
        else:
            found = False
    finally:
        busy[0] = False
    if found:
        _deny(f"walking the call stack ({event}) from the candidate's code")
