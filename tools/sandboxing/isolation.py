"""Who can reach whom among a verification's processes (docs/verification.md, "Isolation per
machine"). Runs in the agent, the forkserver and every job; Linux only (elsewhere it reports
that nothing was done).

After the candidate's first import its whole process is the adversary's. It runs beside the
judge (a sibling job holding the reference outputs) and below the agent, by default as the same
user. Two things keep them out of its reach:

- **Not dumpable** (`make_undumpable`, `prctl(PR_SET_DUMPABLE, 0)`): the agent, the forkserver
  and every job from its first instruction. A process of the same user can then no longer open
  its `/proc/<pid>/mem`, `environ`, `maps`, `fd/*` or attach with ptrace: the kernel asks for
  CAP_SYS_PTRACE. Measured before (issue 34): a candidate read `/proc/<judge>/mem` while the
  reference outputs were in it.
- **No privileges in the candidate's job** (`drop_privileges`, called just before the candidate
  is imported). Root holds CAP_SYS_PTRACE, which overrides "not dumpable", and CAP_DAC_OVERRIDE,
  which opens every file. Where the job runs as root it becomes the unprivileged user `nobody`
  (65534; its job directory handed to it first) with every capability gone, bounding set
  included, and no_new_privs set (`mode="user"`). Where that would cost it the GPU (a device
  node `nobody` cannot open, or the CUDA IPC that hands a verification's outputs to the judge,
  which fails between users) or its own Python (an installation `nobody` cannot read, such as a
  pyenv under a 0700 /root), it stays uid 0 but drops every capability the same way
  (`mode="capabilities"`): /proc and ptrace are refused, but root's files stay readable to it by
  ownership. A job that is not root has no capability to drop (`mode="same-user"`): only
  "not dumpable" stands between it and its siblings. The returned `Isolation` says which.
"""

from __future__ import annotations

import ctypes
import glob
import os
import signal
import stat
import sys
from dataclasses import dataclass, field
from typing import Literal

NOBODY = 65534
"""The unprivileged identity a root job's candidate runs as."""

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# securebits: uid 0 gains no capability from exec (NOROOT) and cannot raise ambient ones, locked
SECURE_BITS = (1 << 0) | (1 << 1) | (1 << 6) | (1 << 7)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}

Mode = Literal["user", "capabilities", "same-user", "unsupported"]


@dataclass(kw_only=True)
class Isolation:
    """How far the candidate's job is from the judge and the agent (`drop_privileges`)."""

    mode: Mode
    """`user`: runs as `nobody` without capabilities (root's processes and 0700 files out of
    reach); `capabilities`: uid 0 without capabilities (processes out of reach, root's files
    not); `same-user`: not root, nothing to drop (only "not dumpable" protects its siblings);
    `unsupported`: not Linux, nothing done."""
    candidate_uid: int | None
    caps_dropped: bool
    """Effective, permitted, inheritable, ambient and bounding sets all empty."""
    no_new_privs: bool
    judge_dumpable: bool | None
    """Whether the job start (`tools.sandboxing.job_process.child_main`, the same for the judge's job and
    this one) left a job dumpable: it makes every job not dumpable as its first step, and this
    is what that step gave here (None: not known). The judge's own job can confirm it with
    `is_dumpable()`."""
    agent_readable: bool | None
    """The check that it holds: this job could open the agent's `/proc/<pid>/mem` after the
    drop (None: not checked)."""
    notes: list[str] = field(default_factory=list)
    """Why the isolation is weaker than `user`, in words the verdict can carry."""


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _bind(name: str):
    """A libc function, looked up now: the job's guard refuses looking up `prctl`, `syscall`
    and `lchown` through ctypes once it is installed (`tools.job.guard.NATIVE_DENY`), and the jobs
    call these after that, so they are bound when this module is imported (the forkserver, the
    agent). Each is kept inside a wrapper that does only what this module needs: a candidate
    importing this module finds no general prctl or syscall to call past the guard."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None, use_errno=True), name)
    except (OSError, AttributeError):
        return None


def _prctl_for_isolation():
    fn = _bind("prctl")
    if fn is not None:
        fn.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    # option -> the second arguments allowed (None: any); only ever dropping rights
    allowed = {
        PR_GET_DUMPABLE: {0},
        PR_SET_DUMPABLE: {0},
        PR_SET_PDEATHSIG: {int(signal.SIGKILL)},
        PR_CAPBSET_DROP: None,
        PR_SET_SECUREBITS: {SECURE_BITS},
        PR_SET_NO_NEW_PRIVS: {1},
        PR_CAP_AMBIENT: {PR_CAP_AMBIENT_CLEAR_ALL},
    }

    def prctl(option: int, arg2: int = 0) -> int:
        if fn is None:
            raise OSError("prctl is not available")
        if option not in allowed or (allowed[option] is not None and arg2 not in allowed[option]):
            raise OSError(f"prctl({option}, {arg2}) is not one this module makes")
        return int(fn(option, arg2, 0, 0, 0))

    return prctl


def _capset_for_isolation():
    import platform

    fn, number = _bind("syscall"), _SYS_CAPSET.get(platform.machine())

    def clear_capabilities() -> str:
        """capset(): empty effective, permitted and inheritable sets. "" or why it failed."""
        if fn is None or number is None:
            return f"capset: no system call number for {platform.machine()} in this libc"
        header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        if fn(number, ctypes.byref(header), ctypes.byref(data)) != 0:
            return f"capset failed (errno {ctypes.get_errno()})"
        return ""

    return clear_capabilities


def _lchown_for_isolation():
    fn = _bind("lchown")
    if fn is not None:
        fn.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint]

    def lchown(path: str, uid: int) -> bool:
        return fn is not None and fn(os.fsencode(path), uid, uid) == 0

    return lchown


_prctl = _prctl_for_isolation()
_capset = _capset_for_isolation()
_lchown = _lchown_for_isolation()


def make_undumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): other processes of this user can no longer read this one's
    /proc files (mem, environ, maps, fd) nor ptrace it; no core dumps. True when it is now not
    dumpable. Inherited by fork children, reset by exec."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        _prctl(PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError):
        return False
    return is_dumpable() is False


def is_dumpable() -> bool | None:
    """This process's dumpable flag (prctl PR_GET_DUMPABLE); None where it cannot be read."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return _prctl(PR_GET_DUMPABLE) == 1
    except (OSError, AttributeError):
        return None


def drop_privileges(
    workdir: str,
    *,
    agent_pid: int | None = None,
    parent_pid: int | None = None,
    device: str = "cpu",
    uid: int = NOBODY,
    judge_dumpable: bool | None = None,
    change_uid: bool = True,
    cuda_ipc: bool = True,
) -> Isolation:
    """Leave this (the candidate's) job process with no way into the judge or the agent: call it
    after the harness's own set-up (CUDA context, problem loaded) and before the candidate is
    imported. `workdir`: the job's private directory (given to `uid`); `agent_pid`: checked
    unreadable afterwards; `parent_pid`: the process whose death ends this job (PR_SET_PDEATHSIG
    is cleared by a change of uid, so it is set again); `judge_dumpable`: reported as given
    (`Isolation.judge_dumpable`); `change_uid=False`: capabilities only, whatever the machine
    allows; `cuda_ipc`: on a GPU the job hands tensors to another process by CUDA IPC (the
    verification's candidate job does), which fails between users (the judge's import said
    cudaErrorMapBufferObjectFailed on the H200, 2026-12-02), so such a job keeps uid 0 and drops
    every capability. Never raises: what could not be done is in the result's `mode` and
    `notes`."""
    if not sys.platform.startswith("linux"):
        return Isolation(
            mode="unsupported",
            candidate_uid=None,
            caps_dropped=False,
            no_new_privs=False,
            judge_dumpable=None,
            agent_readable=None,
            notes=["not Linux: the candidate's job runs with the agent's rights"],
        )
    notes: list[str] = []
    make_undumpable()
    mode: Mode = "same-user"
    if os.geteuid() == 0:
        mode = _drop_root(workdir, device, uid, change_uid, cuda_ipc, notes)
    else:
        notes.append(
            "the jobs run as one unprivileged user: only 'not dumpable' keeps the candidate out "
            "of the judge's and the agent's memory; their files are readable to it"
        )
    try:
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
    except (OSError, AttributeError):
        pass
    make_undumpable()  # a change of uid resets the flag to suid_dumpable
    _die_with(parent_pid)
    caps, nnp = _status_caps()
    agent_readable = _can_open_mem(agent_pid) if agent_pid else None
    if agent_readable:
        notes.append(f"the agent's /proc/{agent_pid}/mem was still readable after the drop")
    return Isolation(
        mode=mode,
        candidate_uid=os.geteuid(),
        caps_dropped=caps == 0,
        no_new_privs=nnp,
        judge_dumpable=judge_dumpable,
        agent_readable=agent_readable,
        notes=notes,
    )


def _drop_root(
    workdir: str, device: str, uid: int, change_uid: bool, cuda_ipc: bool, notes: list[str]
) -> Mode:
    """A job running as root: to `uid` where it may (`drop_privileges` says when it may not),
    `workdir` given to it; the capability bounding set and every capability dropped either
    way. Returns the mode reached ("user", or "capabilities": uid 0 without capabilities);
    why not "user" goes to `notes`."""
    if not change_uid:
        blocked = "asked to keep uid 0"
    elif cuda_ipc and device.startswith("cuda"):
        blocked = "its outputs go to the judge by CUDA IPC, which fails between users"
    else:
        blocked = unreadable_for_others(device)
    mode: Mode = "capabilities" if blocked else "user"
    if blocked:
        notes.append(
            f"stays uid 0 without capabilities: {blocked} (the agent's files stay readable "
            "to the candidate by ownership)"
        )
    if mode == "user" and not _give_to(workdir, uid):
        mode = "capabilities"
        notes.append(f"stays uid 0 without capabilities: {workdir} could not be given to it")
    _drop_bounding_set(notes)
    if mode == "user":
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.environ["HOME"] = workdir  # root's home is not its to read
        except OSError as exc:
            mode = "capabilities"
            notes.append(f"stays uid 0 without capabilities: setresuid failed ({exc})")
            _give_to(workdir, 0)  # without CAP_DAC_OVERRIDE uid 0 needs to own it
    _clear_capabilities(notes)
    return mode


def unreadable_for_others(device: str = "cpu") -> str:
    """Why a job could not run as another user, or "" when it can: a directory of the Python
    installation, the installed packages or this harness that others cannot traverse or read,
    or (CUDA) a GPU device node that others cannot read and write."""
    import sysconfig

    import torch
    import triton

    paths = {
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.realpath(sysconfig.get_paths()["stdlib"]),
        os.path.realpath(sysconfig.get_paths()["include"]),
        os.path.dirname(os.path.realpath(torch.__file__)),
        os.path.dirname(os.path.realpath(triton.__file__)),
        os.path.dirname(os.path.dirname(os.path.realpath(__file__))),  # this harness (tools/)
    }
    for path in sorted(paths):
        why = _others_cannot_read(path)
        if why:
            return why
    if device.startswith("cuda"):
        for node in sorted(glob.glob("/dev/nvidia*")):
            try:
                st = os.stat(node)
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode) and (st.st_mode & 0o006) != 0o006:
                return f"the GPU device {node} is mode {stat.filemode(st.st_mode)}"
    return ""


def _others_cannot_read(path: str) -> str:
    """Empty when a user with no relation to the owners can list `path` (o+rx) and reach it
    (o+x on every directory above); else which directory stops it."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(1, len(parts) + 1):
        here = os.sep.join(parts[:i]) or os.sep
        try:
            mode = os.stat(here).st_mode
        except OSError:
            return f"{here} cannot be read"
        need = 0o005 if i == len(parts) else 0o001
        if mode & need != need:
            return f"{here} is mode {stat.filemode(mode)}"
    return ""


def _give_to(workdir: str, uid: int) -> bool:
    """Hand the job's directory and what is in it (a carried Triton cache) to `uid`. Links are
    not followed. False when the directory itself could not be handed over. Through libc's
    lchown bound at import: the job's guard refuses Python's chown of the job directory itself
    (only what is under it may change), and this is the harness's step, not the candidate's."""
    paths = [workdir]
    for root, dirs, files in os.walk(workdir, followlinks=False):
        paths += [os.path.join(root, name) for name in dirs + files]
    ok = [_lchown(p, uid) for p in paths]
    return ok[0]


def _drop_bounding_set(notes: list[str]) -> None:
    """Empty the bounding set (what an exec could ever grant) and lock securebits so uid 0 gains
    nothing from an exec. Needs CAP_SETPCAP: done while still root."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    failed = 0
    for cap in range(last + 1):
        try:
            if _prctl(PR_CAPBSET_DROP, cap) != 0:
                failed += 1
        except (OSError, AttributeError):
            failed += 1
    if failed:
        notes.append(f"{failed} capabilities could not be dropped from the bounding set")
    try:
        if _prctl(PR_SET_SECUREBITS, SECURE_BITS) != 0:
            notes.append("securebits could not be locked")
    except (OSError, AttributeError):
        notes.append("securebits could not be locked")


def _clear_capabilities(notes: list[str]) -> None:
    """Empty the effective, permitted, inheritable and ambient sets."""
    try:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except (OSError, AttributeError):
        pass
    why = _capset()
    if why:
        notes.append(why)


def _status_caps() -> tuple[int, bool]:
    """(the union of this process's capability sets, no_new_privs) from /proc/self/status."""
    caps, nnp = -1, False
    try:
        with open("/proc/self/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return caps, nnp
    total = 0
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            total |= int(value.strip(), 16)
        elif key == "NoNewPrivs":
            nnp = value.strip() == "1"
    return total, nnp


def _can_open_mem(pid: int) -> bool:
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return False
    os.close(fd)
    return True


def _die_with(parent_pid: int | None) -> None:
    """PR_SET_PDEATHSIG again (a change of uid clears it); exit if the parent is already gone."""
    if not parent_pid:
        return
    try:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)
