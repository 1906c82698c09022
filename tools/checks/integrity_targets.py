"""What the integrity snapshot (`tools.checks.integrity.Integrity`) covers, by name: the timers
and torch's entry points, what the harness's code resolves at call time, Triton's runtime and
language, the thread and pipe entry points, and the harness's own modules. Read in the
candidate's job when the harness takes its snapshots.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable

import torch


def integrity_targets() -> list[tuple[str, object, str]]:
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


_PINNED_TYPES = (
    frozenset, tuple, str, bytes, int, float, complex, bool, type(None), range,
    types.MappingProxyType, re.Pattern,
)  # fmt: skip
"""Values a harness module's setting can hold that cannot change in place: such a global is
pinned by identity, whatever its name (a rebinding is a change)."""

_MUTABLE_SETTINGS = (
    "VIOLATIONS",
    "TOOLCHAIN",
    "NATIVE_DENY",
    "_ALLOWED_WRITE_PREFIXES",
    "_WRITE_FLAGS",
    "_state",
)
"""The harness's mutable settings and state, compared by content (the guard's state dict)."""


def _add_harness_modules(targets: list[tuple[str, object, str]]) -> None:
    """Every callable of the harness's modules (and the methods of their classes), every
    setting that cannot change in place (frozensets, tuples, numbers, strings: the guard's
    refused events and imports, the audit's operator sets, HARNESS_MODULES itself), pinned by
    identity, and the mutable settings and state by content. Not only named ones: a candidate
    that emptied `_LOCKED_EVENTS` (a frozenset the named list lacked) read raw memory unseen
    (session 18)."""
    import importlib

    # HARNESS_MODULES (one list: issue 37 split some of them), less job_process, as before
    for modname in (m for m in HARNESS_MODULES if m != "tools.sandboxing.job_process"):
        mod = importlib.import_module(modname)
        for n, v in list(vars(mod).items()):
            if n.startswith("__"):
                continue
            if callable(v):
                targets.append((f"{modname}.{n}", mod, n))
                if isinstance(v, type) and v.__module__ == modname:
                    for m, f in list(vars(v).items()):
                        if callable(f) or isinstance(f, (staticmethod, classmethod, property)):
                            targets.append((f"{modname}.{n}.{m}", v, m))
            elif isinstance(v, _PINNED_TYPES) or n in _MUTABLE_SETTINGS:
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


_BUILDER_METHODS = (
    "set_grid_idx",
    "set_grid_dim",
    "create_dot",
    "create_load",
    "create_store",
    "create_masked_load",
    "create_masked_store",
)


HARNESS_MODULES = (
    "tools.checks.compare",
    "tools.checks.compare_chunks",
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
    "tools.checks.integrity_targets",
    "tools.checks.process_snapshot",
    "tools.checks.run_hooks",
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
