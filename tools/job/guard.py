"""Job-process guard: no network, no stray processes, no writes outside the job directory.

Installed by `tools.sandboxing.sandbox` in every job process before untrusted code is imported
(`install`), and locked down by the candidate's job before the candidate's first line
(`lock_down`). Python audit hooks cannot be removed once added, so a candidate cannot switch
this off from Python.
(Native code can still bypass it; the process-group kill, rlimits and the fresh process per job
are the backstop.) Every refused action is also recorded in `VIOLATIONS`, which the verifier
turns into a `cheat` verdict even when the candidate swallowed the exception.

Runs in every job process. The audit hook (`_hook`) hands each event to its check: the file
system's and programs' (`tools.job.guard_files`), or what is refused once locked down
(`tools.job.guard_locked`); the tables and the state are `tools.job.guard_rules`.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from collections.abc import Mapping

from tools.job.guard_files import _check_fs, _check_open, _check_program, toolchain_dirs
from tools.job.guard_locked import _LOCKED_EVENTS, PROTECTED_OP_NAMESPACES, _check_locked
from tools.job.guard_rules import _FS_EVENTS, NATIVE_DENY, VIOLATIONS, _deny, _state, _under

__all__ = ["VIOLATIONS", "install", "isolate_network", "lock_down", "toolchain_dirs"]


CLONE_NEWNET = 0x40000000


def isolate_network() -> bool:
    """Move this process into a fresh network namespace (only loopback, down). Needs privileges;
    returns False where the OS refuses, in which case the audit hook still refuses sockets."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except Exception:
        return False


def install(workdir: str) -> None:
    """Install the audit hook. File-system changes are allowed under `workdir` only; programs
    only from the toolchain's own directories (`toolchain_dirs`)."""
    if _state["installed"]:
        return
    root = os.path.realpath(workdir)
    _state["root"] = root
    _state["bin_dirs"] = tuple(d for d in toolchain_dirs() if not _under(d, root))
    _state["installed"] = True
    sys.addaudithook(_hook)


def lock_down(candidate_file: str | None = None) -> None:
    """From now on (for the rest of this job), refuse what only a candidate would do: start a
    Python thread (the dispatch audit and the hooks are per thread; work in another thread is
    unseen), load native code through ctypes other than the CUDA driver and the installed
    packages' libraries, read raw memory through ctypes, import cffi-style loaders, and register
    `aten` operator implementations through torch.library. Called by the candidate's job after
    the harness's own set-up (CUDA, Triton's driver) and before the candidate is imported."""
    import _thread
    import threading

    import torch

    if _state["locked"]:
        return
    dirs = [os.path.dirname(torch.__file__)]
    for name in ("triton", "nvidia"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs += list(spec.submodule_search_locations)
    _state["lib_dirs"] = tuple(os.path.realpath(d) for d in dirs)
    _state["candidate_file"] = candidate_file
    _state["locked"] = True

    def refuse_thread(*args: object, **kwargs: object) -> None:
        _deny("starting a thread (work in another thread is outside the audit)")

    _thread.start_new_thread = refuse_thread
    if hasattr(_thread, "start_new"):
        _thread.start_new = refuse_thread
    threading._start_new_thread = refuse_thread  # type: ignore[attr-defined]
    if hasattr(threading, "_start_joinable_thread"):
        threading._start_joinable_thread = refuse_thread  # type: ignore[attr-defined]
    register = torch._C._dispatch_library

    def dispatch_library(kind, ns, *args, __register=register, **kwargs):
        if str(ns) in PROTECTED_OP_NAMESPACES:
            _deny(f"registering {ns} operator implementations (torch.library)")
        return __register(kind, ns, *args, **kwargs)

    torch._C._dispatch_library = dispatch_library
    # ctypes' raw copies raise no audit event: with an address from `data_ptr()` they read and
    # write a tensor's memory from Python (compute in Python, written back past every audit).
    # Nothing of torch or Triton uses them in a job; replaced outright (no wrapper keeps the
    # original within reach), and rebuilding them from `_memmove_addr` raises `ctypes.cdata`.
    import ctypes

    def refuse_raw_copy(*args: object, **kwargs: object) -> None:
        _deny("copying raw memory through ctypes (memmove/memset)")

    ctypes.memmove = refuse_raw_copy
    ctypes.memset = refuse_raw_copy


def _hook(event: str, args: tuple, fs_events: Mapping = _FS_EVENTS) -> None:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        _check_open(path, mode, flags)
    elif event in fs_events:
        _check_fs(event, args)
    elif event.startswith("socket.") and event not in ("socket.getaddrinfo",):
        if event == "socket.__new__":
            # AF_UNIX socketpairs are used by nothing we need either; refuse all sockets.
            _deny("opening a socket")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            _deny(f"network access ({event})")
    elif event == "subprocess.Popen":
        exe, argv, cwd, env = (tuple(args) + (None,) * 4)[:4]
        if isinstance(argv, (list, tuple)):
            argv = argv[0] if argv else None
        _check_program("starting a subprocess", exe or argv, cwd, env, "path")
    elif event in ("os.posix_spawn", "os.exec"):
        # subprocess uses posix_spawn for simple cases (with the path it resolved); os.exec*
        # without a slash runs a file in the current directory, posix_spawnp searches PATH.
        path = args[0] if args else ""
        env = args[2] if len(args) > 2 else None
        lookup = "either" if event == "os.posix_spawn" else "cwd"
        _check_program(f"process creation ({event})", path, None, env, lookup)
    elif event in ("os.system", "os.fork", "os.forkpty", "os.spawn"):
        _deny(f"process creation ({event})")
    elif event == "pty.spawn":
        _deny("process creation (pty.spawn)")
    elif _state["locked"] and event in ("resource.setrlimit", "resource.prlimit"):
        # The job's limits (its CPU ceiling, tools.sandboxing.job_process) are set before lock-down.
        _deny(f"changing a resource limit ({event})")
    elif _state["locked"] and event in ("os.kill", "os.killpg"):
        # Signals to other processes (the judge, the agent) are no kernel's work. Allowed: a
        # probe (signal 0: the job's watcher asks whether the agent lives) and the job itself
        # or its own process group (the watcher ending the job).
        target, sig = (tuple(args) + (None, None))[:2]
        own = os.getpgrp() if event == "os.killpg" else os.getpid()
        if sig != 0 and target not in (0, own):
            _deny(f"sending signal {sig} to process {target} ({event})")
    elif _state["locked"] and event in _LOCKED_EVENTS:
        _check_locked(event, args)
    elif _state["locked"] and event == "sys.addaudithook":
        # An audit hook can never be removed or listed: it would run the candidate's code at
        # every event the harness raises (each `open` of the export), past every check.
        _deny("adding an audit hook (sys.addaudithook)")
    elif event == "ctypes.dlsym":
        # ctypes reaches libc directly, past every Python-level check above. Kernels have no
        # use for these symbols; neither torch nor triton look them up through ctypes.
        name = args[1] if len(args) > 1 else ""
        if isinstance(name, bytes):
            name = name.decode(errors="replace")
        if isinstance(name, str) and (
            name in NATIVE_DENY or name.startswith(("PySys_", "_PyRuntime"))
        ):
            _deny(f"calling the native function {name}() through ctypes")
