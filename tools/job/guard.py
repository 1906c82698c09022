"""Job-process guard: no network, no stray processes, no writes outside the job directory.

Installed by `tools.sandboxing.sandbox` in every job process before untrusted code is imported. Python audit
hooks cannot be removed once added, so a candidate cannot switch this off from Python. (Native
code can still bypass it; the process-group kill, rlimits and the fresh process per job are the
backstop.) Every refused action is also recorded in `VIOLATIONS`, which the verifier turns into a
`cheat` verdict even when the candidate swallowed the exception.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import sys
import sysconfig
from collections.abc import Mapping
from types import MappingProxyType

VIOLATIONS: list[str] = []

# Programs Triton and the CUDA toolchain legitimately run while compiling a kernel.
TOOLCHAIN = frozenset(
    {
        "ptxas",
        "ptxas-blackwell",
        "cc",
        "gcc",
        "g++",
        "c++",
        "clang",
        "clang++",
        "ld",
        "ldconfig",
        "nvcc",
        "nvdisasm",
        "cuobjdump",
        "nvlink",
        "fatbinary",
        "hipcc",
        "ld.lld",
        "file",  # Triton 3.6 checks what it built with `file`
        "objdump",
        "readelf",
    }
)
# libc / CPython symbols whose lookup through ctypes is refused (process creation, sockets,
# file writes, signals, the audit-hook machinery itself).
NATIVE_DENY = frozenset(
    {
        "system",
        "popen",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "fexecve",
        "fork",
        "vfork",
        "clone",
        "clone3",
        "posix_spawn",
        "posix_spawnp",
        "socket",
        "socketpair",
        "connect",
        "bind",
        "sendto",
        "sendmsg",
        "open",
        "open64",
        "openat",
        "openat64",
        "creat",
        "creat64",
        "fopen",
        "fopen64",
        "freopen",
        "unlink",
        "unlinkat",
        "rename",
        "renameat",
        "renameat2",
        "remove",
        "rmdir",
        "mkdir",
        "mkdirat",
        "symlink",
        "symlinkat",
        "link",
        "linkat",
        "chmod",
        "fchmodat",
        "chown",
        "lchown",
        "fchownat",
        "utime",
        "utimes",
        "utimensat",
        "mkfifo",
        "mknod",
        "mknodat",
        "shm_open",
        "truncate",
        "ftruncate",
        "kill",
        "killpg",
        "ptrace",
        "syscall",
        "mprotect",
        "setrlimit",
        "prlimit",
        "prctl",  # PR_SET_PDEATHSIG 0 would let a job outlive its agent (tools.sandboxing.job_process)
        "prlimit64",
        "dup2",
        "dup3",
        "write",
        "pwrite",
        "pwrite64",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Outside the job directory only /dev/null may be opened for writing. /dev/shm is not allowed:
# it outlives the job and is shared by every later verification (a result cache there is a
# cheat). torch creates its shared-memory segments (`/torch_<pid>_...`) and CUDA IPC its
# refcount files from C++ (`shm_open`), which raises no Python audit event, so refusing Python's
# writes there costs torch nothing. /tmp is private in the same way: TMPDIR is the job directory.
_ALLOWED_WRITE_PREFIXES = ("/dev/null",)
# Audit events (CPython 3.11) that change the file system, as (argument index, index of its
# dir_fd argument or None, follow) for each path they change. follow=False: the event acts on the
# name itself (removing or renaming a symlink leaves its target alone), so only the parent
# directory is resolved; follow=True: it acts on what the path points to (or, for os.link's
# source, makes a second name for it that a later write would go through).
_FS_EVENTS: Mapping[str, tuple[tuple[int, int | None, bool], ...]] = MappingProxyType(
    {
        "os.remove": ((0, 1, False),),  # also os.unlink
        "os.rmdir": ((0, 1, False),),
        "os.mkdir": ((0, 2, False),),
        "os.rename": ((0, 2, False), (1, 3, False)),  # also os.replace
        "os.symlink": ((1, 2, False),),
        "os.link": ((0, 2, True), (1, 3, False)),
        "os.truncate": ((0, None, True),),  # also os.ftruncate (an fd)
        "os.chmod": ((0, 2, True),),
        "os.chown": ((0, 3, True),),
        "os.utime": ((0, 3, True),),
        "os.chflags": ((0, None, True),),
        "os.setxattr": ((0, None, True),),
        "os.removexattr": ((0, None, True),),
        "shutil.copyfile": ((1, None, True),),
        "shutil.copymode": ((1, None, True),),
        "shutil.copystat": ((1, None, True),),
        "shutil.copytree": ((1, None, True),),
        "shutil.move": ((0, None, False), (1, None, False)),
        "shutil.rmtree": ((0, 1, False),),
        "shutil.chown": ((0, None, True),),
        "shutil.make_archive": ((0, None, False),),
        "shutil.unpack_archive": ((1, None, True),),
    }
)
# (Read-only, and bound as a default argument of the functions that read it: the integrity
# snapshot compares the guard's functions with their defaults, so the table cannot be emptied.)
_state: dict[str, object] = {
    "root": None,
    "installed": False,
    "bin_dirs": (),
    "locked": False,
    "lib_dirs": (),
    "candidate_file": None,
}
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
CLONE_NEWNET = 0x40000000


def isolate_network() -> bool:
    """Move this process into a fresh network namespace (only loopback, down). Needs privileges;
    returns False where the OS refuses, in which case the audit hook still refuses sockets."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except Exception:
        return False


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


def toolchain_dirs() -> tuple[str, ...]:
    """Directories (resolved) the toolchain may be run from: the system's bin directories, the
    Python environment's, CUDA's, and the Triton package (its bundled `ptxas`). Read when the
    guard is installed, before the candidate can change the environment."""
    dirs = ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/cuda/bin"]
    dirs += [os.path.join(sys.prefix, "bin"), os.path.join(sys.base_prefix, "bin")]
    dirs.append(os.path.dirname(os.path.realpath(sys.executable)))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "bin"))
    for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH", "TRITON_CUOBJDUMP_PATH"):
        if os.environ.get(var):
            dirs.append(os.path.dirname(os.environ[var]))
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        dirs.append(os.path.join(os.path.dirname(spec.origin), "backends"))
    # torch's bundled ptxas (Inductor compiles with torch/bin/ptxas: the torch.compile baseline
    # failed without it on the H200 machine, session 5) and the CUDA wheels' (nvidia/*/bin)
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        torch_dir = os.path.dirname(spec.origin)
        dirs.append(os.path.join(torch_dir, "bin"))
        nvidia = os.path.join(os.path.dirname(torch_dir), "nvidia")
        if os.path.isdir(nvidia):
            dirs += [os.path.join(nvidia, d, "bin") for d in sorted(os.listdir(nvidia))]
    # Where this machine's PATH (the agent's, as the job starts) finds each toolchain program,
    # link targets resolved: the H200 machine's gcc is /opt/gcc/bin/gcc, and with the fixed
    # list above Triton's launcher build was refused as a sandbox violation, so every correct
    # kernel was judged `cheat` (GPU run, session 5). Relative PATH entries are not followed.
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)
    )
    found = [shutil.which(name, path=path) for name in sorted(TOOLCHAIN)]
    # and the compilers the environment names (Triton builds its launcher with $CC first)
    # and the compiler Python itself was built with (sysconfig), which build tools fall back on
    named = [os.environ.get("CC", ""), os.environ.get("CXX", "")]
    named += [(sysconfig.get_config_var(v) or "").split(" ")[0] for v in ("CC", "CXX")]
    for value in filter(None, named):
        found.append(value if os.path.isabs(value) else shutil.which(value, path=path))
    for exe in found:
        if exe:
            dirs += [os.path.dirname(exe), os.path.dirname(os.path.realpath(exe))]
    resolved = (os.path.realpath(d) for d in dirs)
    return tuple(dict.fromkeys(d for d in resolved if d != "/"))


def _deny(what: str) -> None:
    VIOLATIONS.append(what)
    raise PermissionError(f"triton-agent sandbox: {what} is not allowed in a candidate")


def _is_write(mode: object, flags: object) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip(os.sep) + os.sep)


def _fd_path(fd: int) -> str | None:
    """What an open file descriptor refers to, or None for pipes, sockets and memfds."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith(os.sep) and not target.startswith("/memfd:") else None


def _resolve(
    path: object, dir_fd: object = None, follow: bool = True, base: str = ""
) -> str | None:
    """The absolute, symlink-free path an operation on `path` changes. With `follow`, the path's
    own symlink is followed too; without, only its directory is resolved."""
    if path is None:
        return None
    if isinstance(path, int):
        return _fd_path(path)
    p = os.fsdecode(os.fspath(path))  # type: ignore[arg-type]
    if not os.path.isabs(p):
        if not base:
            base = os.getcwd()
            if isinstance(dir_fd, int) and dir_fd >= 0:
                base = _fd_path(dir_fd) or base
        p = os.path.join(base, p)
    head, tail = os.path.split(p.rstrip(os.sep))
    if follow or tail in ("", ".", ".."):
        return os.path.realpath(p)
    return os.path.join(os.path.realpath(head), tail)


def _open_dirs() -> list[str]:
    """Directories this process holds open: a candidate can pass one as `dir_fd` to `os.open`,
    whose audit event does not carry it."""
    found = []
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in fds:
        target = _fd_path(int(name))
        if target and os.path.isdir(target):
            found.append(target)
    return found


_RAW_MEMORY = re.compile(r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(mem|pagemap)$")


def _check_open(path: object, mode: object, flags: object) -> None:
    if _state["locked"] and isinstance(path, (str, bytes, os.PathLike)):
        # A process's memory as a file (its own included: plain Python computing on raw
        # memory, with no ctypes and no tensor op), read or written.
        p = os.path.normpath(os.fsdecode(os.fspath(path)))
        if _RAW_MEMORY.match(p) or _RAW_MEMORY.match(os.path.realpath(p)):
            _deny(f"opening {p} (a process's memory)")
    if isinstance(path, int) or path is None or not _is_write(mode, flags):
        return
    root = _state["root"]
    p = os.fsdecode(os.fspath(path))  # type: ignore[arg-type]
    bases = [""]
    if mode is None and not os.path.isabs(p):
        bases += _open_dirs()  # os.open(p, ..., dir_fd=?) resolves p against one of them
    for base in bases:
        full = _resolve(p, follow=True, base=base) or ""
        if full == root or _under(full, root) or full.startswith(_ALLOWED_WRITE_PREFIXES):  # type: ignore[arg-type]
            continue
        _deny(f"writing {full}")


def _check_fs(event: str, args: tuple, fs_events: Mapping = _FS_EVENTS) -> None:
    root = _state["root"]
    for index, fd_index, follow in fs_events[event]:
        if index >= len(args):
            continue
        dir_fd = args[fd_index] if fd_index is not None and fd_index < len(args) else None
        full = _resolve(args[index], dir_fd, follow)
        if full is None or _under(full, root):  # type: ignore[arg-type]
            continue
        if event == "os.mkdir" and os.path.lexists(full):
            continue  # fails with EEXIST (os.makedirs(..., exist_ok=True) of an existing dir)
        _deny(f"{event} of {full} (outside the job directory)")


def _executables(prog: object, cwd: object, env: object, lookup: str) -> list[str]:
    """The files a request to run `prog` could execute, resolved. A path with a slash is relative
    to `cwd`; a bare name is looked up in PATH (`lookup` "path": subprocess, posix_spawnp), in
    the current directory ("cwd": os.exec*), or in either ("either": os.posix_spawn's audit
    event does not say which of posix_spawn / posix_spawnp raised it)."""
    p = os.fsdecode(os.fspath(prog))  # type: ignore[arg-type]
    base = os.getcwd()
    if cwd:
        base = os.path.join(base, os.fsdecode(cwd))  # type: ignore[arg-type]
    candidates = []
    if os.sep in p or lookup in ("cwd", "either"):
        candidates.append(os.path.join(base, p))
    if os.sep not in p and lookup in ("path", "either"):
        try:
            path_dirs = os.get_exec_path(env)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            path_dirs = os.get_exec_path()
        for d in path_dirs:
            c = os.path.join(base, os.fsdecode(d), p)
            if os.path.isfile(c) and os.access(c, os.X_OK):
                candidates.append(c)
                break
    return [os.path.realpath(c) for c in candidates if os.path.isfile(c)]


def _check_program(what: str, prog: object, cwd: object, env: object, lookup: str) -> None:
    """Only toolchain programs (by name), and only from the toolchain's directories (by resolved
    path): a `cc` in the job directory, or on a PATH the candidate changed, is not run."""
    name = os.path.basename(os.fsdecode(os.fspath(prog))) if prog else ""  # type: ignore[arg-type]
    if name not in TOOLCHAIN:
        _deny(f"{what} ({name or prog!r})")
    root = _state["root"]
    for exe in _executables(prog, cwd, env, lookup):
        trusted = any(_under(exe, d) for d in _state["bin_dirs"])  # type: ignore[union-attr]
        if _under(exe, root) or not trusted:  # type: ignore[arg-type]
            _deny(f"{what} ({exe}: not an installed toolchain program)")


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
