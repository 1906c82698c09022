"""Job-process guard: no network, no stray processes, no writes outside the job directory.

Installed by `tools.sandbox` in every job process before untrusted code is imported. Python audit
hooks cannot be removed once added, so a candidate cannot switch this off from Python. (Native
code can still bypass it; the process-group kill, rlimits and the fresh process per job are the
backstop.) Every refused action is also recorded in `VIOLATIONS`, which the verifier turns into a
`cheat` verdict even when the candidate swallowed the exception.
"""

from __future__ import annotations

import ctypes
import os
import sys

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
        "truncate",
        "ftruncate",
        "kill",
        "killpg",
        "ptrace",
        "syscall",
        "mprotect",
        "setrlimit",
        "prlimit",
        "prlimit64",
        "dup2",
        "dup3",
        "write",
        "pwrite",
        "pwrite64",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_ALLOWED_WRITE_PREFIXES = ("/dev/null", "/dev/shm/", "/proc/self/")
_state: dict[str, object] = {"root": None, "installed": False}
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
    """Install the audit hook. Writes are allowed under `workdir` only."""
    if _state["installed"]:
        return
    _state["root"] = os.path.realpath(workdir)
    _state["installed"] = True
    sys.addaudithook(_hook)


def _deny(what: str) -> None:
    VIOLATIONS.append(what)
    raise PermissionError(f"triton-agent sandbox: {what} is not allowed in a candidate")


def _is_write(mode: object, flags: object) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _hook(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if isinstance(path, int) or path is None or not _is_write(mode, flags):
            return
        p = os.fsdecode(path)
        full = os.path.realpath(p if os.path.isabs(p) else os.path.join(os.getcwd(), p))
        root = _state["root"]
        if full == root or full.startswith(root + os.sep):  # type: ignore[operator]
            return
        if full.startswith(_ALLOWED_WRITE_PREFIXES):
            return
        _deny(f"writing {full}")
    elif event.startswith("socket.") and event not in ("socket.getaddrinfo",):
        if event == "socket.__new__":
            # AF_UNIX socketpairs are used by nothing we need either; refuse all sockets.
            _deny("opening a socket")
        elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
            _deny(f"network access ({event})")
    elif event == "subprocess.Popen":
        exe, argv = args[0], args[1]
        prog = exe or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
        name = os.path.basename(os.fsdecode(prog)) if prog else ""
        if name not in TOOLCHAIN:
            _deny(f"starting a subprocess ({name or prog!r})")
    elif event in ("os.posix_spawn", "os.exec"):
        # subprocess uses posix_spawn for simple cases; the toolchain is allowed as above.
        path = args[0] if args else ""
        name = os.path.basename(os.fsdecode(path)) if path else ""
        if name not in TOOLCHAIN:
            _deny(f"process creation ({event} {name or path!r})")
    elif event in ("os.system", "os.fork", "os.forkpty", "os.spawn"):
        _deny(f"process creation ({event})")
    elif event == "pty.spawn":
        _deny("process creation (pty.spawn)")
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
