"""The judge and the agent out of the candidate's reach (issue 34, docs/verification.md
"Isolation per machine").

A judge-like job holds a secret in memory (as the judge holds the reference outputs) and a
candidate-like job started beside it through the real Sandbox tries to read it the ways the red
team did: /proc/<judge>/mem, /proc/<judge>/environ, ptrace. The candidate-like job runs without
the Python guard (the adversary owns its process and can step around it): only the kernel
stands in the way. Controls show that the same attempts succeed against a plain child process
and, where the jobs run as root, from a job that kept its privileges."""

from __future__ import annotations

import ctypes
import dataclasses
import os
import secrets
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import ROOT
from tools.sandboxing.isolation import is_dumpable
from tools.sandboxing.job_process import drop_privileges
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import Sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

PTRACE_SEIZE = 0x4206


def holder(channel, secret: bytes, drop: bool = False) -> dict:
    """Judge-like: keeps `secret` in a tensor, says where, waits. `drop`: with the rights a
    candidate's job keeps (the machine where every job runs as one unprivileged user)."""
    import torch

    if drop:
        drop_privileges()

    held = torch.tensor(list(secret), dtype=torch.uint8)
    channel.send({"pid": os.getpid(), "address": held.data_ptr(), "dumpable": is_dumpable()})
    channel.recv()  # until the test is done
    return {"kept": int(held.sum())}


def intruder(pid: int, address: int, size: int, drop: bool) -> dict:
    """Candidate-like: optionally drops its privileges the way a candidate's job does, then
    tries to reach process `pid`."""
    isolation = dataclasses.asdict(drop_privileges()) if drop else None
    deathsig = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(2, ctypes.byref(deathsig), 0, 0, 0)  # PR_GET_PDEATHSIG: a uid change clears it
    return {
        "isolation": isolation,
        "uid": os.geteuid(),
        "pdeathsig": deathsig.value,
        **attempts(pid, address, size),
    }


def attempts(pid: int, address: int, size: int) -> dict:
    """What this process can take from process `pid`: bytes at `address` of its memory, its
    environment, a ptrace attachment. Each is the data, or the error's name."""
    out: dict = {}
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        try:
            out["mem"] = os.pread(fd, size, address)
        finally:
            os.close(fd)
    except OSError as exc:
        out["mem"] = type(exc).__name__
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            out["environ"] = f.read()
    except OSError as exc:
        out["environ"] = type(exc).__name__
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    # SEIZE does not stop the tracee; it is detached when this process exits
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
        out["ptrace"] = "attached"
    else:
        out["ptrace"] = os.strerror(ctypes.get_errno())
    return out


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(device="cpu", max_workers=2, limits=Limits(timeout_s=120))


def _reach_judge(
    sb: Sandbox, drop: bool, judge_drops: bool = False, intruder: str = "intruder", *extra
) -> tuple[dict, dict]:
    """(what the judge-like job said, what the candidate-like job beside it got)."""
    secret = b"REFERENCE-" + secrets.token_hex(8).encode()
    with sb.slot() as slot:
        judge = sb.start(slot, "tests.test_isolation:holder", secret, judge_drops)
        try:
            where = judge.recv(timeout=90)
            got = sb.run(
                f"tests.test_isolation:{intruder}",
                where["pid"],
                where["address"],
                len(secret),
                *((drop,) if intruder == "intruder" else extra),
                limits=Limits(timeout_s=90, guard=False),
            )
        finally:
            judge.send("done")
            judge.end(judge.wait_result())
    assert got.kind == "ok", got.error + got.stderr_tail
    return {**where, "secret": secret}, got.value


def test_candidate_job_cannot_reach_the_judge(sandbox):
    judge, got = _reach_judge(sandbox, drop=True)
    assert got["mem"] == "PermissionError", got["mem"]
    assert got["environ"] == "PermissionError", got["environ"]
    assert got["ptrace"] == os.strerror(1)  # EPERM
    assert judge["dumpable"] is False  # not dumpable from its first instruction
    assert got["pdeathsig"] == 9  # still ends with its parent after the drop
    iso = got["isolation"]
    assert iso["agent_readable"] is False
    assert iso["judge_dumpable"] is False
    assert iso["no_new_privs"] is True
    if os.geteuid() == 0:
        assert iso["mode"] in ("user", "capabilities"), iso
        assert iso["caps_dropped"] is True
        assert (iso["candidate_uid"] == 65534) == (iso["mode"] == "user")
        assert iso["mode"] == "user" or iso["notes"], "a weaker mode says why"
    else:
        assert iso["mode"] == "same-user"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing uid needs root")
def test_user_mode_as_nobody(sandbox, tmp_path):
    """`mode="user"` even here, where `nobody` cannot read this machine's Python (so the drop
    would keep uid 0): the job becomes uid 65534, owns its directory, cannot read a file only
    root may read, and cannot reach the judge."""
    private = tmp_path / "root_only"
    private.write_text("the agent's\n")
    private.chmod(0o600)
    judge, got = _reach_judge(sandbox, True, False, "intruder_as_nobody", str(private))
    assert got["isolation"]["mode"] == "user", got["isolation"]
    assert got["uid"] == 65534 and got["workdir_owner"] == 65534
    assert got["private_file"] == "PermissionError"
    assert got["mem"] == "PermissionError", got["mem"]
    assert got["environ"] == "PermissionError"
    assert got["ptrace"] == os.strerror(1)
    assert got["isolation"]["agent_readable"] is False
    assert got["isolation"]["caps_dropped"] is True


def test_not_dumpable_keeps_out_a_job_with_the_same_rights(sandbox):
    """Where every job runs as one unprivileged user, the judge and the candidate have the same
    uid and the same (no) capabilities: only the judge's not being dumpable refuses the reads.
    Simulated here by dropping both jobs' privileges the same way."""
    judge, got = _reach_judge(sandbox, drop=True, judge_drops=True)
    assert got["mem"] == "PermissionError", got["mem"]
    assert got["environ"] == "PermissionError", got["environ"]
    assert got["ptrace"] == os.strerror(1)
    assert judge["dumpable"] is False


def test_control_a_plain_child_is_readable(sandbox, tmp_path):
    """The same attempts from the same kind of job succeed against a plain (dumpable) process:
    what refused them above is the isolation, not the attempts."""
    secret = b"PLAIN-" + secrets.token_hex(8).encode()
    code = textwrap.dedent(
        f"""
        import ctypes, os, sys
        buf = ctypes.create_string_buffer({secret!r}, {len(secret)})
        print(os.getpid(), ctypes.addressof(buf), flush=True)
        sys.stdin.read()
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TA_TEST_SECRET": secret.hex()},  # /proc/<pid>/environ: the initial one
    )
    try:
        pid, address = map(int, child.stdout.readline().split())
        got = sandbox.run(
            "tests.test_isolation:intruder",
            pid,
            address,
            len(secret),
            False,
            limits=Limits(timeout_s=90, guard=False),
        )
    finally:
        child.communicate("", timeout=30)
    assert got.kind == "ok", got.error + got.stderr_tail
    assert got.value["mem"] == secret
    assert secret.hex().encode() in got.value["environ"]
    assert got.value["ptrace"] == "attached"


@pytest.mark.skipif(os.geteuid() != 0, reason="root's capabilities: only where jobs run as root")
def test_control_root_overrides_not_dumpable(sandbox):
    """As root a job that keeps its capabilities reads even a job that is not dumpable
    (CAP_SYS_PTRACE): on such a machine the candidate's drop is what keeps the judge out."""
    judge, got = _reach_judge(sandbox, drop=False)
    assert judge["dumpable"] is False
    assert got["mem"] == judge["secret"]
    assert got["ptrace"] == "attached"


def give_own_directory() -> bool:
    from tools.sandboxing.isolation import _give_to

    return _give_to(os.getcwd(), os.geteuid())  # to its own owner: changes nothing


def test_job_directory_can_be_handed_over_under_the_guard(sandbox):
    """The drop gives the job's directory to `nobody` while the job's guard is installed (which
    refuses Python's chown of the directory itself)."""
    got = sandbox.run("tests.test_isolation:give_own_directory", limits=Limits(timeout_s=60))
    assert got.kind == "ok" and got.value is True, got.error


def test_bound_prctl_only_drops_rights():
    """libc's prctl is bound before the guard (which refuses looking it up): the wrapper a
    candidate could import makes only the calls that drop rights."""
    import signal

    from tools.sandboxing import isolation

    for option, arg in (
        (isolation.PR_SET_DUMPABLE, 1),
        (isolation.PR_SET_PDEATHSIG, 0),
        (isolation.PR_SET_PDEATHSIG, int(signal.SIGTERM)),
        (isolation.PR_SET_NO_NEW_PRIVS, 0),
        (15, 0),  # PR_SET_NAME
    ):
        with pytest.raises(OSError, match="not one this module makes"):
            isolation._prctl(option, arg)
    assert isolation._prctl(isolation.PR_GET_DUMPABLE) in (0, 1)


def test_stderr_tail_follows_no_link(tmp_path):
    """The job's directory is the candidate's: a stderr log replaced by a link to a file only
    the agent may read is not read through the link."""
    from tools.sandboxing.job_files import stderr_tail

    private = tmp_path / "private"
    private.write_text("agent's secret\n")
    log = tmp_path / "stderr.log"
    log.symlink_to(private)
    assert stderr_tail(str(log)) == ""
    log.unlink()
    log.write_text("Traceback: boom\n")
    assert stderr_tail(str(log)) == "Traceback: boom"


def test_agent_not_dumpable(sandbox):
    """The agent that relays between the judge and the candidate (it built a Sandbox)."""
    assert sandbox.undumpable is True
    assert is_dumpable() is False


def dropped_candidate_job(channel, *args, **kwargs) -> dict:
    """The product's candidate job with the drop before it, before the job's own set-up
    (stricter than where the worker is to call it). `TA_TEST_DROP=user-over-ipc`: change uid
    on a GPU too (the judge then cannot open the outputs' CUDA IPC handles: seen on the H200)."""
    from tools.job.worker import candidate_job

    how = os.environ.get("TA_TEST_DROP", "default")
    iso = drop_privileges(cuda_ipc=how != "user-over-ipc")
    out = candidate_job(channel, *args, **kwargs)
    out["isolation"] = dataclasses.asdict(iso)
    return out


class DroppingSandbox(Sandbox):
    """Runs the verification's candidate job through `dropped_candidate_job`."""

    drop = "default"

    def start(self, slot, fn, *args, env=None, **kwargs):
        from tools.job.worker import candidate_job

        if fn is candidate_job:
            fn = "tests.test_isolation:dropped_candidate_job"
            env = {**(env or {}), "TA_TEST_DROP": self.drop}
        return super().start(slot, fn, *args, env=env, **kwargs)


@pytest.mark.parametrize(
    ("device", "drop"),
    [
        ("cpu", "default"),
        pytest.param("cuda", "default", marks=pytest.mark.gpu),
    ],
)
def test_honest_kernel_still_verified_after_the_drop(device, drop):
    """An honest kernel is still `ok` with its job unprivileged: the job directory, Triton's
    cache, the output handover (and on a GPU the device and CUDA IPC) keep working."""
    from tools.orchestrate.verify import Verifier, VerifyOptions

    sb = DroppingSandbox(device=device, max_workers=2, limits=Limits(timeout_s=120))
    sb.drop = drop
    v = Verifier(VerifyOptions(device=device, trials=2), sandbox=sb)
    from tools.core.problem import read_problem

    problem = read_problem(str(ROOT / "examples" / "problems" / "relu.py"))
    kernel = (ROOT / "examples" / "kernels" / "relu.py").read_text()
    verdict = v.verify(problem, kernel)
    assert verdict.status == "ok", verdict.message


def intruder_as_nobody(pid: int, address: int, size: int, private_file: str) -> dict:
    """`intruder` in `user` mode on a machine whose Python `nobody` cannot read (the drop
    would stay uid 0 there): the check of the installation is skipped, and nothing is imported
    after the drop."""
    from tools.sandboxing import isolation
    from tools.sandboxing.job_process import _JOB, _dump_reply

    _dump_reply(("ok", {"warm": [1]}))  # what the reply imports, imported while it can be
    isolation.unreadable_for_others = lambda device="cpu": ""
    iso = drop_privileges()
    try:
        with open(private_file, "rb"):
            private = "read"
    except OSError as exc:
        private = type(exc).__name__
    return {
        "isolation": dataclasses.asdict(iso),
        "uid": os.geteuid(),
        "workdir_owner": os.stat(_JOB["workdir"]).st_uid,
        "private_file": private,
        **attempts(pid, address, size),
    }
