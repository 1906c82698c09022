"""The guard's box: a guarded job changes the file system only inside its own directory (every
mutating operation, not only `open`; symlinks resolved), has no /tmp or /dev/shm outside it, and
runs toolchain programs only from where they are installed (a `cc` of its own is not run).

Each operation is tried twice in a guarded CPU job: on a directory outside the job's (refused,
recorded as a violation, the directory unchanged) and on the job's own directory (works).
"""

from __future__ import annotations

import os
import uuid

import pytest

from tools.sandboxing.sandbox import Sandbox

_PRELUDE = """
import os, shutil, subprocess
from tools.job import guard
JOB = os.getcwd()
with open(os.path.join(JOB, "victim.txt"), "w") as f:  # the same layout as the outside dir
    f.write("original")
os.mkdir(os.path.join(JOB, "emptydir"))
"""

_FINISH = """
try:
    op()
    error = None
except PermissionError as e:
    error = str(e)
result = (error, list(guard.VIOLATIONS))
"""

# Each operation acts on the directory D (outside, or the job's own directory JOB).
OPS = {
    "remove": "os.remove(os.path.join(D, 'victim.txt'))",
    "unlink": "os.unlink(os.path.join(D, 'victim.txt'))",
    "rename": "os.rename(os.path.join(D, 'victim.txt'), os.path.join(D, 'renamed.txt'))",
    "replace": "os.replace(os.path.join(D, 'victim.txt'), os.path.join(D, 'renamed.txt'))",
    "rename_into_job": "os.rename(os.path.join(D, 'victim.txt'), os.path.join(JOB, 'got.txt'))",
    "rmdir": "os.rmdir(os.path.join(D, 'emptydir'))",
    "mkdir": "os.mkdir(os.path.join(D, 'newdir'))",
    "makedirs": "os.makedirs(os.path.join(D, 'a', 'b'))",
    "symlink": "os.symlink('/etc/hostname', os.path.join(D, 'link'))",
    "hardlink": "os.link(os.path.join(D, 'victim.txt'), os.path.join(D, 'hard.txt'))",
    "hardlink_into_job": "os.link(os.path.join(D, 'victim.txt'), os.path.join(JOB, 'h.txt'))",
    "truncate": "os.truncate(os.path.join(D, 'victim.txt'), 0)",
    "open_truncate": "open(os.path.join(D, 'victim.txt'), 'w').close()",
    "open_create": "open(os.path.join(D, 'new.txt'), 'x').close()",
    "chmod": "os.chmod(os.path.join(D, 'victim.txt'), 0o600)",
    "chown": "os.chown(os.path.join(D, 'victim.txt'), os.getuid(), -1)",
    "utime": "os.utime(os.path.join(D, 'victim.txt'), (0, 0))",
    "shutil_rmtree": "shutil.rmtree(os.path.join(D, 'emptydir'))",
    "shutil_copyfile": "shutil.copyfile(os.path.join(D, 'victim.txt'), os.path.join(D, 'c.txt'))",
    "shutil_move": "shutil.move(os.path.join(D, 'victim.txt'), os.path.join(D, 'moved.txt'))",
    "mkdir_dir_fd": "os.mkdir('viafd', dir_fd=os.open(D, os.O_RDONLY))",
    "unlink_dir_fd": "os.unlink('victim.txt', dir_fd=os.open(D, os.O_RDONLY))",
    "os_open_dir_fd": (
        "os.close(os.open('viafd.txt', os.O_WRONLY | os.O_CREAT, dir_fd=os.open(D, os.O_RDONLY)))"
    ),
}


@pytest.fixture(scope="module")
def sb():
    return Sandbox(device="cpu", max_workers=1)


def _run(sb: Sandbox, source: str):
    """Run `source` in a guarded job; the job's answer is whatever it binds to `result`."""
    expr = f"(lambda g: (exec({source!r}, g), g.get('result'))[1])({{}})"
    out = sb.run("builtins:eval", expr, timeout=60)
    assert out.kind == "ok", out.error
    return out.value


def _job(op: str, target: str) -> str:
    return _PRELUDE + f"D = {target}\ndef op():\n    {op}\n" + _FINISH


def _snapshot(directory) -> dict:
    snap = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            content = open(p).read() if os.path.isfile(p) else None
            snap[os.path.relpath(p, directory)] = (content, st.st_mode, st.st_mtime_ns, st.st_nlink)
    return snap


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_text("original")
    (d / "emptydir").mkdir()
    return d


@pytest.mark.parametrize("name", sorted(OPS))
def test_operation_outside_the_job_dir_is_refused(sb, outside, name):
    before = _snapshot(outside)
    error, violations = _run(sb, _job(OPS[name], repr(str(outside))))
    assert error and "not allowed" in error, (name, error)
    assert violations, name
    assert _snapshot(outside) == before, f"{name} changed the directory outside the job's"


@pytest.mark.parametrize("name", sorted(OPS))
def test_same_operation_inside_the_job_dir_works(sb, name):
    error, violations = _run(sb, _job(OPS[name], "JOB"))
    assert error is None and violations == [], (name, error, violations)


_SYMLINK_ESCAPE = """
import os
from tools.job import guard
os.symlink(OUT, "to_outside")  # a symlink in the job dir may point anywhere ...
os.symlink(os.path.join(OUT, "victim.txt"), "to_victim")
refused = []
for attempt in (
    lambda: open("to_outside/victim.txt", "w"),  # ... but nothing is written through it
    lambda: open("to_victim", "a"),
    lambda: os.truncate("to_victim", 0),
    lambda: os.chmod("to_victim", 0o600),
    lambda: os.remove("to_outside/victim.txt"),
    lambda: os.mkdir("to_outside/made"),
    lambda: os.rename("to_outside/victim.txt", "stolen.txt"),
):
    try:
        attempt()
    except PermissionError:
        refused.append(True)
os.remove("to_victim")  # removing the link itself touches only the job dir
os.makedirs("a/b")
fd = os.open(".", os.O_RDONLY)
os.chdir("a/b")
try:  # "../x" is inside relative to the cwd, outside relative to the dir_fd
    os.open("../escaped.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
except PermissionError:
    refused.append(True)
result = (len(refused), list(guard.VIOLATIONS), os.path.lexists(os.path.join(JOB, "to_victim")))
"""


def test_writes_through_a_symlink_or_dir_fd_to_outside_are_refused(sb, outside):
    before = _snapshot(outside)
    src = f"OUT = {str(outside)!r}\nJOB = __import__('os').getcwd()\n" + _SYMLINK_ESCAPE
    refused, violations, link_left = _run(sb, src)
    assert refused == 8 and len(violations) == 8, violations
    assert not link_left
    assert _snapshot(outside) == before


def test_no_shared_tmp_or_dev_shm(sb):
    name = f"triton_agent_cache_{uuid.uuid4().hex}"
    src = (
        "import os\nfrom tools.job import guard\nrefused = 0\n"
        f"for p in ('/dev/shm/{name}', '/dev/shm/torch_{name}', '/tmp/{name}'):\n"
        "    try:\n        open(p, 'w').write('cached result')\n"
        "    except PermissionError:\n        refused += 1\n"
        "import tempfile, torch\n"
        "with tempfile.NamedTemporaryFile() as f:  # TMPDIR is the job directory\n"
        "    inside = f.name.startswith(os.getcwd())\n"
        "t = torch.ones(3).share_memory_()  # torch's own shared memory still works\n"
        "result = (refused, inside, float(t.sum()), list(guard.VIOLATIONS))\n"
    )
    refused, inside, total, violations = _run(sb, src)
    assert refused == 3 and len(violations) == 3, violations
    assert inside and total == 3.0
    for p in (f"/dev/shm/{name}", f"/dev/shm/torch_{name}", f"/tmp/{name}"):
        assert not os.path.exists(p)


_FAKE_CC = """
import os, subprocess
from tools.job import guard
with open("cc", "w") as f:
    f.write("#!/bin/sh\\ntouch " + MARKER + "\\nsleep 300 &\\n")
os.chmod("cc", 0o755)
refused = 0
attempts = [
    lambda: subprocess.run(["./cc"]),
    lambda: subprocess.run([os.path.abspath("cc")]),
    lambda: subprocess.run(["cc"], env={"PATH": os.getcwd() + ":/usr/bin"}),
    lambda: subprocess.run(["/usr/bin/env"], executable="./cc"),
    lambda: os.posix_spawn("./cc", ["cc"], {}),
    lambda: os.posix_spawnp("cc", ["cc"], {"PATH": os.getcwd()}),
]
os.environ["PATH"] = os.getcwd() + ":" + os.environ.get("PATH", "")
attempts.append(lambda: subprocess.run(["cc", "--version"]))
for attempt in attempts:
    try:
        attempt()
    except PermissionError:
        refused += 1
os.environ["PATH"] = "/usr/bin:/bin"
real = subprocess.run(["cc", "--version"], capture_output=True).returncode
result = (refused, real, list(guard.VIOLATIONS))
"""


def test_a_cc_of_the_jobs_own_is_not_run_the_installed_one_is(sb, tmp_path):
    marker = tmp_path / "cc_ran"
    refused, real, violations = _run(sb, f"MARKER = {str(marker)!r}\n" + _FAKE_CC)
    assert refused == 7 and len(violations) == 7, violations
    assert not marker.exists(), "the job's own cc ran"
    assert real == 0, "the installed cc must still run (Triton builds its launcher with it)"


_LOCKED = r'''
import os, shutil, ctypes, ctypes.util, _thread, threading
import torch
from tools.job import guard
CAND = os.path.join(os.getcwd(), "candidate.py")
guard.lock_down(CAND)

def attempt(code, filename):
    """Run `code` as if written in `filename`: 'ok' or the refusal."""
    try:
        exec(compile(code, filename, "exec"), {"ctypes": ctypes, "torch": torch, "os": os})
        return "ok"
    except PermissionError as e:
        return "refused: " + str(e)

libm = ctypes.util.find_library("m") or "libm.so.6"
import _ctypes
shutil.copy(_ctypes.__file__, "mylib.so")  # any shared library, now in the job directory
result = {
    "thread": attempt("import threading; threading.Thread(target=print).start()", CAND),
    "_thread": attempt("import _thread; _thread.start_new_thread(print, ())", CAND),
    "load installed lib": attempt(f"ctypes.CDLL({libm!r})", CAND),
    "symbol from candidate": attempt(f"ctypes.CDLL({libm!r}).fmaxf", CAND),
    "symbol from a library": attempt(f"ctypes.CDLL({libm!r}).fmaxf", "/usr/lib/python3/somelib.py"),
    "load job-built lib": attempt("ctypes.CDLL(os.path.abspath('mylib.so'))", CAND),
    "raw read": attempt("ctypes.string_at(id(0), 8)", CAND),
    "aten impl": attempt("torch.library.Library('aten', 'IMPL')", CAND),
    "own namespace": attempt("torch.library.Library('guardtestns', 'DEF')", CAND),
    "stack walk from candidate": attempt("import inspect; inspect.stack(0)", CAND),
    "stack walk by a library": attempt("import inspect; inspect.stack(0)", "/usr/lib/python3/somelib.py"),
    "namedtuple in candidate": attempt("import collections; collections.namedtuple('P', 'a b')", CAND),
    "violations": len(guard.VIOLATIONS),
}
'''


def test_lock_down_refuses_what_only_a_candidate_does(sb):
    """After `guard.lock_down`, the candidate's own code cannot start threads, look up native
    functions, load a library from the job directory, read raw memory, register aten kernels or
    walk the stack; libraries (another file name) and installed libraries still work."""
    r = _run(sb, _LOCKED)
    refused = {k for k, v in r.items() if isinstance(v, str) and v.startswith("refused")}
    assert refused == {
        "thread",
        "_thread",
        "symbol from candidate",
        "load job-built lib",
        "raw read",
        "aten impl",
        "stack walk from candidate",
    }, r
    assert r["violations"] == len(refused)
