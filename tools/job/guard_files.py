"""The guard's checks of the file system and of programs (`tools.job.guard`): writes only under
the job directory (or /dev/null), no process's memory opened as a file, programs only from the
toolchain's own directories. Runs in every job process, inside the audit hook.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import sysconfig
from collections.abc import Mapping

from tools.job.guard_rules import (
    _ALLOWED_WRITE_PREFIXES,
    _FS_EVENTS,
    _WRITE_FLAGS,
    TOOLCHAIN,
    _deny,
    _state,
    _under,
)


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


def _is_write(mode: object, flags: object) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


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
