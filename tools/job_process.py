"""The job's side of the sandbox: the entry point of a job process (`child_main`: its own
session, private directory and caches, limits, the guard, then the job function), the channel
it talks to the parent through, and the reply format both sides share (plain data only, read
back with the weights-only unpickler: `load_reply`)."""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
import traceback
from typing import Any

from tools.limits import Limits, apply_rlimits


def child_main(conn, workdir: str, env: dict[str, str], lim: Limits, device: str) -> None:
    """Entry point of a job process. Never returns: ends with os._exit."""
    import sys

    try:
        os.setsid()
    except OSError:
        pass
    _die_with_parent()
    # stdout/stderr of the job (and of anything it spawns) go to files the parent can read.
    for fd, name in ((1, "stdout.log"), (2, "stderr.log")):
        f = os.open(os.path.join(workdir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    sys.dont_write_bytecode = True
    os.chdir(workdir)
    os.environ.update(env)
    cache = os.path.join(workdir, "triton_cache")
    os.makedirs(cache, exist_ok=True)  # may already hold a copy of this candidate's own cache
    os.environ["TRITON_CACHE_DIR"] = cache
    os.environ["TMPDIR"] = workdir
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(workdir, "inductor_cache")
    tempfile.tempdir = workdir
    apply_rlimits(lim, device)
    try:
        fn_ref, args, kwargs, interactive = pickle.loads(conn.recv_bytes())
        from tools import guard

        if not lim.network:
            guard.isolate_network()
        if lim.guard:
            guard.install(workdir)
        func = _resolve(fn_ref)
        if interactive:
            args = (Channel(conn), *args)
        result = ("ok", func(*args, **kwargs))
    except BaseException:  # noqa: BLE001 - everything becomes a message for the parent
        result = ("error", traceback.format_exc(limit=-12))
    try:
        try:
            data = _dump_reply(result)
        except Exception:
            data = _dump_reply(("error", "result not serialisable:\n" + traceback.format_exc()))
        # Read what the parent sent and the job did not: a socket closed with unread data
        # resets the connection, and the parent would lose this reply.
        while conn.poll(0):
            conn.recv_bytes()
        conn.send_bytes(data)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


class Channel:
    """The job's side of an interactive session: `recv()` the parent's next message (plain
    data), `send()` plain data back (tensors, numbers, strings, bytes, containers)."""

    def __init__(self, conn) -> None:
        self._conn = conn

    def recv(self) -> Any:
        return pickle.loads(self._conn.recv_bytes())

    def send(self, msg: Any) -> None:
        self._conn.send_bytes(_dump_reply(("msg", msg)))


def _die_with_parent() -> None:
    """Linux: SIGKILL this job when the process that started it (the forkserver, which exits
    with the agent) dies. A job leads its own session, so a killed agent's jobs would otherwise
    run on: seen here, an interpreted 1 GiB job and its ptxas outlived their agent by minutes."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):
        pass


def _plain(obj: Any, depth: int = 0) -> Any:
    """A job's return value as plain data: tensors, numbers, strings, bytes, None, dtypes and
    devices in dicts, lists and tuples (dataclasses become dicts, anything else its repr)."""
    import dataclasses

    import torch

    if depth > 50:
        return "<nested too deep>"
    if obj is None or type(obj) in (bool, int, float, str, bytes):
        return obj
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t if type(t) is torch.Tensor else t.as_subclass(torch.Tensor)
    if isinstance(obj, (torch.dtype, torch.device)):
        return obj
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, dict):
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(_plain(v, depth + 1) for v in obj)
    if isinstance(obj, (list, set, frozenset)):
        return [_plain(v, depth + 1) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj), depth + 1)
    item = getattr(obj, "item", None)  # numpy scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        try:
            return _plain(item(), depth + 1)
        except Exception:
            pass
    return repr(obj)[:500]


def _dump_reply(result: tuple) -> bytes:
    import io

    import torch

    buf = io.BytesIO()
    torch.save(_plain(result), buf)
    return buf.getvalue()


def load_reply(data: bytes) -> tuple[str, Any]:
    """Read a job's reply with torch's weights-only unpickler.

    The job process runs untrusted code, which can write anything to the reply pipe (or replace
    the worker's own reply). A plain `pickle.loads` here would run whatever callable the bytes
    name *in the agent's process*; the weights-only unpickler only rebuilds tensors, dtypes,
    numbers, strings and containers, so a forged reply can at worst be wrong, never execute.
    """
    import io
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reply = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] in ("ok", "error", "msg")):
        raise ValueError("malformed reply")
    if reply[0] == "error" and not isinstance(reply[1], str):
        raise ValueError("malformed error reply")
    return reply


def _resolve(ref: str):
    import importlib

    module, _, name = ref.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
