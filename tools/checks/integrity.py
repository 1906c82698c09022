"""Integrity: what the candidate must not replace or leave behind in its process (job side).

`Integrity` snapshots the harness's functions, the timers and torch's entry points; `hooks()`
lists the ways to run code after `forward` returns (profile/trace functions, monitoring tools,
Triton runtime hooks, torch modes left on the stack). The candidate's job compares both after
the import, the constructor and every forward; a difference is tampering.
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections.abc import Callable

import torch


def _integrity_targets() -> list[tuple[str, object, str]]:
    """(label, owner, attribute name) of everything `Integrity` snapshots, in this order: the
    timers and torch's entry points, what the harness's code resolves at call time, Triton's
    runtime and language, the thread and pipe entry points, the harness's own modules."""
    targets: list[tuple[str, object, str]] = []

    def add(label: str, owner: object, *names: str) -> None:
        for n in names:
            if hasattr(owner, n):
                targets.append((f"{label}.{n}", owner, n))

    _add_timers_and_torch(add)
    _add_resolved_at_call_time(add)
    _add_triton(add)
    _add_threads_and_pipes(add)
    _add_harness_modules(targets)
    return targets


def _add_timers_and_torch(add: Callable[..., None]) -> None:
    """The timers, and torch's entry points the harness calls (seeding, allocating, comparing,
    moving, saving, modules, CUDA sync)."""
    import time

    add(
        "time",
        time,
        "perf_counter",
        "perf_counter_ns",
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
    )
    add(
        "torch",
        torch,
        "allclose",
        "isclose",
        "equal",
        "manual_seed",
        "save",
        "load",
        "empty",
        "empty_like",
        "randn",
    )
    add("torch.testing", torch.testing, "assert_close")
    add(
        "torch.Tensor",
        torch.Tensor,
        "clone",
        "to",
        "cpu",
        "detach",
        "data_ptr",
        "untyped_storage",
        "numel",
        "__eq__",
        "copy_",
        "contiguous",
        "__reduce_ex__",
    )
    add(
        "torch.nn.Module",
        torch.nn.Module,
        "__call__",
        "_call_impl",
        "to",
        "state_dict",
        "load_state_dict",
    )
    add(
        "torch.cuda", torch.cuda, "synchronize", "Event", "Stream", "current_stream", "is_available"
    )


def _add_resolved_at_call_time(add: Callable[..., None]) -> None:
    """What the harness's code resolves by name when it runs: builtins, torch's functions and
    tensor methods, the profiler and dispatch-mode stack, pickle, Triton's timers."""
    # Everything the harness's own code resolves at call time: builtins (`isinstance`, `len`,
    # `type`...) and every tensor method, inherited ones included (`torch.Tensor.reshape = f`
    # shadows `TensorBase.reshape` without touching it).
    import builtins
    import pickle

    add("builtins", builtins, *[n for n, v in vars(builtins).items() if callable(v)])
    add("torch", torch, *[n for n, v in vars(torch).items() if callable(v) and n[:1] != "_"])
    add(
        "torch.Tensor",
        torch.Tensor,
        *[n for n in dir(torch.Tensor) if not n.startswith("__") or n in _DUNDERS],
    )
    add("torch.autograd", torch.autograd, "_profiler_enabled")
    add("torch.autograd.profiler", torch.autograd.profiler, "profile", "record_function")
    import torch.utils._python_dispatch as pd

    add(
        "torch.utils._python_dispatch",
        pd,
        "_pop_mode",
        "_push_mode",
        "_disable_current_modes",
        "_pop_mode_temporarily",
        "_get_current_dispatch_mode",
        "_len_torch_dispatch_stack",
        "_pop_torch_dispatch_stack",
    )
    add(
        "torch._C",
        torch._C,
        "_pop_torch_dispatch_stack",
        "_push_on_torch_dispatch_stack",
        "_len_torch_dispatch_stack",
        "_DisableTorchDispatch",
        "_ExcludeDispatchKeyGuard",
        "_disabled_torch_dispatch_impl",
    )
    add("pickle", pickle, "dumps", "dump", "Pickler")
    try:
        import triton.testing as tt

        add("triton.testing", tt, "do_bench", "do_bench_cudagraph")
    except Exception:
        pass


def _add_triton(add: Callable[..., None]) -> None:
    """Triton's launch entry points, the interpreter (its builder's arithmetic included) and
    the language it lowers."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    add("triton.JITFunction", JITFunction, "run", "__getitem__")
    add("triton.InterpretedFunction", InterpretedFunction, "run", "__getitem__")
    from triton.runtime import interpreter

    add("triton.GridExecutor", interpreter.GridExecutor, "__call__")
    # The interpreter's arithmetic (every builder method, not only those the checks wrap: a
    # `create_fadd` doing a ReLU in numpy is compute inside the launch) and the language it
    # lowers (`tl.maximum = f` changes what every kernel computes).
    builder = interpreter.interpreter_builder
    add(
        "triton.interpreter_builder",
        builder,
        *sorted(
            {n for n in dir(builder) if n[:2] != "__" and callable(getattr(builder, n, None))}
            | set(_BUILDER_METHODS)
        ),
    )
    add(
        "triton.interpreter", interpreter, *[n for n, v in vars(interpreter).items() if callable(v)]
    )
    import triton.language as tl

    for lang in (tl, tl.core, tl.math, tl.standard, getattr(tl, "semantic", None)):
        if lang is not None:
            label = getattr(lang, "__name__", "triton.language")
            add(label, lang, *[n for n, v in vars(lang).items() if callable(v) and n[:2] != "__"])


def _add_threads_and_pipes(add: Callable[..., None]) -> None:
    """Thread creation, aten registration, `triton.jit`, and the pipe to the parent."""
    import _thread
    import threading

    import triton

    add("_thread", _thread, "start_new_thread", "start_new")
    add("threading", threading, "_start_new_thread", "_start_joinable_thread")
    add("torch._C", torch._C, "_dispatch_library")
    add("triton", triton, "jit", "cdiv")
    from multiprocessing import connection

    add(
        "multiprocessing.connection.Connection",
        connection.Connection,
        "send_bytes",
        "send",
        "close",
    )


def _add_harness_modules(targets: list[tuple[str, object, str]]) -> None:
    """Every callable of the harness's modules (and the methods of their classes), and their
    settings (the guard's lists and state, the audit's operator sets)."""
    import importlib

    # HARNESS_MODULES (one list: issue 37 split some of them), less job_process, as before
    for modname in (m for m in HARNESS_MODULES if m != "tools.sandboxing.job_process"):
        mod = importlib.import_module(modname)
        for n, v in list(vars(mod).items()):
            if callable(v) and not n.startswith("__"):
                targets.append((f"{modname}.{n}", mod, n))
                if isinstance(v, type) and v.__module__ == modname:
                    for m, f in list(vars(v).items()):
                        if callable(f) or isinstance(f, (staticmethod, classmethod, property)):
                            targets.append((f"{modname}.{n}.{m}", v, m))
        for n in (
            "VIOLATIONS",
            "TOOLCHAIN",
            "NATIVE_DENY",
            "_ALLOWED_WRITE_PREFIXES",
            "_WRITE_FLAGS",
            "_state",
            "ALLOC_OPS",
            "VIEW_OPS",
            "LIBRARY_OPS",
            "POISON_OPS",
            "PROFILER_FREE",
        ):
            if hasattr(mod, n):
                targets.append((f"{modname}.{n}", mod, n))


_DUNDERS = frozenset(
    {
        "__torch_function__",
        "__torch_dispatch__",
        "__iter__",
        "__len__",
        "__getitem__",
        "__setitem__",
        "__bool__",
        "__float__",
        "__int__",
        "__index__",
        "__array__",
        "__reduce_ex__",
        "__deepcopy__",
        "__eq__",
        "__ne__",
        "__hash__",
        "__repr__",
        "__format__",
        "__del__",
    }
)
"""Tensor dunders the harness's code reaches implicitly (iteration, truth, hashing, pickling)."""

HARNESS_MODULES = (
    "tools.checks.compare",
    "tools.job.handover",
    "tools.job.worker",
    "tools.job.candidate_arming",
    "tools.job.candidate_trials",
    "tools.job.candidate_evidence",
    "tools.job.job_common",
    "tools.job.forward_checks",
    "tools.job.size_guard",
    "tools.checks.audit",
    "tools.checks.audit_ops",
    "tools.checks.audit_mode",
    "tools.checks.constructor_audit",
    "tools.checks.integrity",
    "tools.checks.op_profiler",
    "tools.job.interp_checks",
    "tools.job.interp_races",
    "tools.job.interp_libdevice",
    "tools.job.guard",
    "tools.job.guard_rules",
    "tools.job.guard_files",
    "tools.job.guard_locked",
    "tools.sandboxing.sandbox",
    "tools.job.devshim",
    "tools.sandboxing.job_process",
)
"""Modules whose code runs in the candidate's process; a name added to one of their globals
(`tools.job.forward_checks.isinstance = f`) shadows the builtin for that module's code."""


def _names(namespace: dict) -> frozenset[str]:
    # dunders excluded: Python adds `__warningregistry__` to a module that warned
    return frozenset(n for n in namespace if not n.startswith("__"))


def _module_keys() -> dict[str, frozenset[str]]:
    import importlib

    out = {}
    for modname in HARNESS_MODULES:
        try:
            out[modname] = _names(vars(importlib.import_module(modname)))
        except Exception:  # noqa: BLE001 - a module this build lacks
            continue
    return out


_BUILDER_METHODS = (
    "set_grid_idx",
    "set_grid_dim",
    "create_dot",
    "create_load",
    "create_store",
    "create_masked_load",
    "create_masked_store",
)


def _get(owner: object, name: str) -> object:
    if isinstance(owner, type):
        return owner.__dict__.get(name, getattr(owner, name, None))
    return _unwrap_interpreter(getattr(owner, name, None))


_INTERPRETER_FILE = os.path.join("triton", "runtime", "interpreter.py")


def _interpreter_own(value: object) -> bool:
    """A `triton.language` name the interpreter itself re-pointed while running a launch (and
    left so): its own functions, partials of them, `print`/`range` (static_print, static_range)."""
    import builtins
    import functools

    if isinstance(value, functools.partial):
        value = value.func
    if value is builtins.print or value is builtins.range:
        return True
    if isinstance(value, type):
        return value.__module__ == "triton.runtime.interpreter"
    code = getattr(value, "__code__", None)
    return (
        isinstance(value, types.FunctionType)
        and code is not None
        and code.co_filename.endswith(_INTERPRETER_FILE)
    )


def _unwrap_interpreter(value: object) -> object:
    """The Triton interpreter wraps `triton.language` builtins in lambdas of its own (and keeps
    them after a launch); what it wraps is what must not change."""
    for _ in range(8):
        code = getattr(value, "__code__", None)
        kw = getattr(value, "__kwdefaults__", None)
        if (
            isinstance(value, types.FunctionType)
            and code is not None
            and code.co_filename.endswith(_INTERPRETER_FILE)
            and isinstance(kw, dict)
            and "member" in kw
        ):
            value = kw["member"]
        else:
            break
    return value


def _fingerprint(value: object) -> tuple:
    """Identity of a value plus the mutable insides that would change its behaviour: a function's
    code and defaults (`f.__code__ = ...` keeps the object), a set's or dict's contents."""
    if isinstance(value, types.MethodType):  # a fresh object on every attribute access
        return ("method", id(value.__self__)) + _fingerprint(value.__func__)
    fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    parts: tuple = (id(value),)
    if isinstance(fn, types.FunctionType):
        parts += (id(fn.__code__), repr(fn.__defaults__), repr(fn.__kwdefaults__))
    elif isinstance(value, (dict, list, set, frozenset)):
        parts += (repr(sorted(map(repr, value.items() if isinstance(value, dict) else value))),)
    return parts


class Integrity:
    """A snapshot of the harness, timers and torch entry points the candidate must not patch.

    Checked after the candidate is imported and after every forward: replacing a timer (to fake
    speed), the comparison or the audit (to fake correctness) or the guard's settings is a cheat
    even when it changes nothing the verifier relies on (the comparison runs in the parent).
    """

    def __init__(self, problem: types.ModuleType | None = None) -> None:
        targets = _integrity_targets()
        self._problem = problem
        if problem is not None:
            # The problem's own functions (`get_inputs` is called by the harness every trial)
            targets += [
                (f"the problem's {n}", problem, n)
                for n, v in vars(problem).items()
                if callable(v) and not n.startswith("__")
            ]
        self._values = [
            (label, owner, name, _fingerprint(_get(owner, name))) for label, owner, name in targets
        ]
        self._keys = _module_keys()
        if problem is not None:
            self._keys["the problem module"] = _names(vars(problem))

    def changed(self) -> list[str]:
        out = []
        now_keys = _module_keys()
        if self._problem is not None:
            now_keys["the problem module"] = _names(vars(self._problem))
        for modname, keys in now_keys.items():
            before = self._keys.get(modname)
            if before is not None and keys != before:
                added = sorted(keys - before)[:3]
                out.append(f"the globals of {modname} (names added: {added})")
        for label, owner, name, fp in self._values:
            try:
                now = _fingerprint(_get(owner, name))
            except Exception:
                now = ()
            if now != fp and not (
                label.startswith("triton.language") and _interpreter_own(_get(owner, name))
            ):
                out.append(label)
        return out


def hooks() -> list[str]:
    """Ways to run code after `forward` returns, while the harness reads and exports its outputs:
    profile and trace functions (per process and for new threads), sys.monitoring tools, and
    torch function/dispatch modes left on the stack. Checked after every forward; a hook that
    was not there before the candidate was imported is tampering (a profile hook can rewrite an
    output after the audit closed)."""
    found = []
    if sys.getprofile() is not None:
        found.append("a profile function (sys.setprofile)")
    if sys.gettrace() is not None:
        found.append("a trace function (sys.settrace)")
    for name, what in (
        ("getprofile", "a thread profile function"),
        ("gettrace", "a thread trace function"),
    ):
        get = getattr(threading, name, None)
        if get is not None and get() is not None:
            found.append(f"{what} (threading.set{name[3:]})")
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in range(6):
            try:
                if monitoring.get_tool(tool) is not None:
                    found.append(f"a sys.monitoring tool ({tool})")
            except Exception:  # noqa: BLE001
                pass
    try:
        from triton import knobs

        for name in (
            "launch_enter_hook",
            "launch_exit_hook",
            "kernel_load_start_hook",
            "kernel_load_end_hook",
            "jit_cache_hook",
            "jit_post_compile_hook",
            "add_stages_inspection_hook",
        ):
            hook = getattr(knobs.runtime, name, None)
            if hook is not None:
                # Triton's default is an empty HookChain: the object and its calls identify it.
                calls = [id(c) for c in getattr(hook, "calls", ())]
                found.append(
                    f"a Triton runtime hook (triton.knobs.runtime.{name}: {id(hook):x} {calls})"
                )
    except Exception:  # noqa: BLE001 - an older Triton without knobs
        pass
    found += _interrupt_hooks()
    # Counts, not presence: the CPU device shim keeps a function mode of the harness's own on
    # the stack, so a change of the count (a mode added, or the harness's popped) is the sign.
    try:
        found.append(f"{torch._C._len_torch_function_stack()} torch function mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    try:
        found.append(f"{torch._C._len_torch_dispatch_stack()} torch dispatch mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    return found


def _interrupt_hooks() -> list[str]:
    """Code that runs *between* the harness's steps, wherever the interpreter happens to be:
    signal handlers and armed interval timers, garbage-collector callbacks, and the hooks Python
    calls on errors and warnings the harness's own code may raise. Identities, so that a hook
    installed and a hook replaced both show."""
    import gc
    import signal as _py_signal
    import warnings

    found = []
    try:
        import _signal

        for sig in range(1, _py_signal.NSIG):
            try:
                handler = _signal.getsignal(sig)
            except (ValueError, OSError):
                continue
            if callable(handler):
                found.append(f"a handler of signal {sig} ({id(handler):x})")
        for which in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
            if hasattr(_signal, which) and any(_signal.getitimer(getattr(_signal, which))):
                found.append(f"an armed interval timer ({which})")
    except Exception:  # noqa: BLE001 - a platform without them
        pass
    found += [f"a garbage-collector callback ({id(c):x})" for c in list(gc.callbacks)]
    for owner, name in (
        (sys, "excepthook"),
        (sys, "unraisablehook"),
        (sys, "displayhook"),
        (threading, "excepthook"),
        (warnings, "showwarning"),
        (warnings, "_showwarnmsg"),
        (warnings, "formatwarning"),
    ):
        fn = getattr(owner, name, None)
        found.append(f"{getattr(owner, '__name__', owner)}.{name} ({id(fn):x})")
    return found


_MISSING = object()


def _rebound_by_import(module: object, name: str) -> bool:
    """Whether `module` is what the import system binds as `name` after `import name`: the
    module registered under that name, loaded from a file outside the job's directory (where
    a candidate's own files are). A package attribute that was a re-export of another module
    (the original keeps its own entries under its own name) is then the file's module."""
    if not isinstance(module, types.ModuleType) or sys.modules.get(name) is not module:
        return False
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if getattr(module, "__name__", None) != name or not isinstance(origin, str):
        return False
    if not os.path.isfile(origin) or getattr(module, "__file__", None) != origin:
        return False
    where = os.path.realpath(origin)
    return where.startswith(_INSTALLED) and not where.startswith(
        os.path.realpath(os.getcwd()) + os.sep
    )


def _installed_dirs() -> tuple[str, ...]:
    """Where installed Python code lives (the standard library, site-packages), resolved: a file
    the candidate wrote elsewhere (its directory, /tmp) is not a library's."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


_INSTALLED = _installed_dirs()


class ProcessSnapshot:
    """Every callable of every module loaded before the candidate (module globals, and the
    methods of the classes each module defines), by identity.

    The harness calls into many modules after the import (`random.seed` and `numpy.random.seed`
    when it makes a trial's inputs, `pickle.loads` and `Connection.recv_bytes` when it reads the
    parent's message, the problem's `torch` global...). Listing them one by one only moves an
    adversary to the next; so nothing that existed before the candidate ran may be re-pointed,
    anywhere. Python raises no audit event for a module or class attribute set, so this is a
    check, made after every window in which the candidate's code ran (import, constructor, each
    forward, each release of outputs): ~125k entries with torch, Triton and numpy loaded, about
    0.15 s to take and a few milliseconds to check (CPU). Modules imported later are the
    candidate's own business (the harness imports what it needs before the snapshot)."""

    def __init__(self) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated module attributes warn when touched
            self._take()

    def _take(self) -> None:
        entries: list[tuple[object, str, object, str]] = []
        classes: list[tuple[type, object, frozenset[str], str]] = []
        # `pkg.name` bound to a module that is not `sys.modules["pkg.name"]` (a re-export, e.g.
        # torch.onnx.symbolic_helper -> torch.onnx._internal...symbolic_helper): a later
        # `import pkg.name` by any library rebinds it to the module of that file
        # (`_rebound_by_import`). Liger-Kernel's ops were refused for exactly that on the H200.
        aliases: set[tuple[int, str]] = set()
        for name, mod in list(sys.modules.items()):
            try:
                d = mod.__dict__
            except Exception:  # noqa: BLE001 - a lazy or odd module object
                continue
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                # callables, and modules bound as globals (`problem.torch = proxy`)
                if k[:2] == "__" or not (callable(v) or isinstance(v, types.ModuleType)):
                    continue
                entries.append((d, k, v, name))
                if isinstance(v, types.ModuleType) and f"{name}.{k}" not in sys.modules:
                    aliases.add((id(d), k))
                if isinstance(v, type) and getattr(v, "__module__", None) == name:
                    cd = v.__dict__
                    classes.append((v, cd, frozenset(cd), f"{name}.{k}"))
                    for ck, cv in list(cd.items()):
                        # dunders too (a context manager's `__exit__` runs in the harness)
                        if callable(cv) or isinstance(cv, (staticmethod, classmethod, property)):
                            entries.append((cd, ck, cv, f"{name}.{k}"))
        self._entries = entries
        self._classes = classes
        self._aliases = aliases

    def __len__(self) -> int:
        return len(self._entries)

    def rebased(self) -> ProcessSnapshot:
        """The same entries with their current values as the reference: after the harness's own
        patches (the launch recorder's `JITFunction.run`), made right after a clean check."""
        other = ProcessSnapshot.__new__(ProcessSnapshot)
        other._entries = [(d, k, d.get(k, _MISSING), where) for d, k, _v, where in self._entries]
        other._classes = [(c, cd, frozenset(cd), w) for c, cd, _k, w in self._classes]
        other._aliases = self._aliases
        return other

    def changed(self, limit: int = 5) -> list[str]:
        out: list[str] = []
        for d, k, v, where in self._entries:
            now = d.get(k, _MISSING)
            if now is v:
                continue
            if where.startswith("triton.language") and _interpreter_own(_unwrap_interpreter(now)):
                continue
            if _unwrap_interpreter(now) is v:
                continue
            if (id(d), k) in self._aliases and _rebound_by_import(now, f"{where}.{k}"):
                continue
            out.append(f"{where}.{k}")
            if len(out) >= limit:
                return out
        # A name added to a class that shadows what its bases give (`Connection.recv_bytes`
        # set on the subclass, a `layout` property given to `nn.Parameter`): the lookup from
        # the harness's code now finds the candidate's.
        for cls, cd, keys, where in self._classes:
            if len(cd) == len(keys):  # a removed callable shows above; additions change the size
                continue
            for k in set(cd) - keys:
                if k in ("__annotations__", "__abstractmethods__", "_abc_impl"):
                    continue  # Python adds these on its own (`__annotations__` when read)
                if where.startswith("triton.language") and _interpreter_own(cd.get(k)):
                    continue  # the interpreter's own (tensor.__repr__ while a launch runs)
                inherited = next((vars(b)[k] for b in cls.__mro__[1:] if k in vars(b)), _MISSING)
                if inherited is not _MISSING and cd.get(k) is not inherited:
                    out.append(f"{where}.{k} (shadowing {cls.__mro__[1].__name__}'s)")
                    if len(out) >= limit:
                        return out
        return out
