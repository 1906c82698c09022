"""Files a job leaves behind, read by the parent: the tail of its stderr (`stderr_tail`) and its
compiled kernels (`copy_cache`: a Triton cache carried from a candidate's verification to its
timing job). A job's directory was written by untrusted code: nothing in it may make the parent
read outside it (`copy_regular_files`)."""

from __future__ import annotations

import os
import shutil


def stderr_tail(path: str, lines: int = 25, chars: int = 3000, max_bytes: int = 1 << 20) -> str:
    """The end of a job's stderr log. The job's directory belongs to the candidate (its uid,
    `tools.sandboxing.isolation`): the log may have been replaced by a link to a file only the agent may
    read, or by a FIFO, so links are not followed, only a regular file is read, and only its
    last `max_bytes`."""
    import stat

    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return ""
            f.seek(max(0, st.st_size - max_bytes))
            text = f.read(max_bytes).decode("utf-8", errors="replace")
        except OSError:
            return ""
    # The harness's own profiler (kineto) logs start/stop lines; they are not the candidate's.
    kept = [ln for ln in text.rstrip().splitlines() if not ln.startswith(_HARNESS_NOISE)]
    return "\n".join(kept[-lines:])[-chars:]


_HARNESS_NOISE = ("USDT:", "STAGE:")


def copy_cache(src: str, dst: str, rebase: bool = False) -> None:
    """A carried cache only saves compile time: failing to copy it is never a job's failure.
    `rebase`: the copy is a job's Triton cache (see `_rebase_triton_groups`)."""
    try:
        copy_regular_files(src, dst)
        if rebase:
            _rebase_triton_groups(dst)
    except OSError:
        pass


def _rebase_triton_groups(cache_dir: str) -> None:
    """Point Triton's group indexes (`<key>/__grp__<name>.json`, which name a compiled kernel's
    files by absolute path) at this copy: they still name the first job's directory, which is
    gone, and Triton would compile again. Only file names are kept, so no entry can point
    outside its own folder; an index whose files did not all arrive (the copy's byte limit, an
    unreadable file) is deleted, so Triton recompiles rather than load half a kernel."""
    import glob
    import json

    for index in glob.glob(os.path.join(cache_dir, "*", "__grp__*")):
        folder = os.path.dirname(index)
        try:
            with open(index) as f:
                data = json.load(f)
            paths = {
                name: os.path.join(folder, os.path.basename(str(old)))
                for name, old in data["child_paths"].items()
            }
            if not all(os.path.isfile(p) for p in paths.values()):
                raise ValueError("incomplete group")
            data["child_paths"] = paths
            with open(index, "w") as f:
                json.dump(data, f)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            try:
                os.unlink(index)
            except OSError:
                pass


def copy_regular_files(src: str, dst: str, max_bytes: int = 512 << 20) -> int:
    """Copy the regular files under `src` into `dst` (same relative paths); symlinks, devices
    and FIFOs are skipped, never followed, and copying stops at `max_bytes`. The source was
    written by an untrusted job, so nothing in it may make the parent read outside it.
    Returns the bytes copied."""
    import stat

    copied = 0
    for root, dirs, files in os.walk(src, followlinks=False):
        rel = os.path.relpath(root, src)
        out_dir = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(out_dir, exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or copied + st.st_size > max_bytes:
                continue
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue
            with os.fdopen(fd, "rb") as f, open(os.path.join(out_dir, name), "wb") as g:
                shutil.copyfileobj(f, g)
            copied += st.st_size
    return copied
