"""The guard's rules and state (`tools.job.guard`): the toolchain programs a job may run, the
native functions refused through ctypes, the file-system events checked and where writes may
go; the state `install` and `lock_down` set; `VIOLATIONS`, the record of every refusal, and
`_deny`, which records and refuses. Runs in every job process.
"""

from __future__ import annotations

import os
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


def _deny(what: str) -> None:
    VIOLATIONS.append(what)
    raise PermissionError(f"triton-agent sandbox: {what} is not allowed in a candidate")


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip(os.sep) + os.sep)
