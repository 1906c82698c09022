"""A time limit on ptxas inside a CUDA draft job (issue 15).

On the H200 (session 9, third run) one ptxas process in a level-2 draft job ran for 341 s and
was still running when the bench's deadline came. A timing job needs its GPU to itself, so it
waited for that draft job, and while a timing job waits no other job starts
(`tools.sandboxing.slots.SlotPool`): the whole lane stood still, and 14 problems (level2/6, 7, 71-74,
77-79, 83, 89-92) got no verdict in two device calls. The draft job's own limit (600 s,
`agent.drafters.CompilerDrafter`) ends such a draft, too late to matter.

The drafter compiles kernels that are speed choices (draft-time variants: convolution layouts
and precisions, GEMM tiles, launch configs), and one that does not compile is simply not a
choice. So the draft job points Triton at a wrapper that runs the real ptxas under `timeout`:
a compile that takes longer than `PTXAS_LIMIT_S` fails like any ptxas error (Triton raises
PTXASError), the variant is skipped, and the draft goes on. Triton finds ptxas through the
`TRITON_PTXAS_PATH` / `TRITON_PTXAS_BLACKWELL_PATH` variables (Triton 3.6 and 3.9); PyTorch's
Inductor sets the first to its bundled ptxas only when it is unset, so the wrapper runs that one
where it exists, as Inductor would have.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat

PTXAS_LIMIT_S = 90
"""CPU seconds one ptxas run may take in a draft job (a tf32x3 convolution kernel compiles in a few
seconds; the H200 run above had one past 340 s)."""
KEYS = {"TRITON_PTXAS_PATH": "ptxas", "TRITON_PTXAS_BLACKWELL_PATH": "ptxas-blackwell"}


def real_ptxas(key: str, binary: str) -> str | None:
    """The ptxas Triton would run for `key`: the variable's own value, else (for plain ptxas)
    PyTorch's bundled one as Inductor would set it, else Triton's bundled binary."""
    given = os.environ.get(key)
    if given and os.path.exists(given):
        return given
    candidates = []
    if binary == "ptxas":
        try:
            import torch

            candidates.append(os.path.join(os.path.dirname(torch.__file__), "bin", "ptxas"))
        except ImportError:
            pass
    try:
        import triton

        candidates.append(
            os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", binary)
        )
    except ImportError:
        pass
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


WALL_FACTOR = 4
"""The wall-clock backstop, in multiples of the limit (a ptxas that waits rather than works)."""


def limit_ptxas(workdir: str, seconds: int = PTXAS_LIMIT_S) -> dict[str, str]:
    """Point this process's Triton at ptxas wrappers in `workdir` that stop ptxas after `seconds`
    of CPU time (`ulimit -t`: SIGXCPU), or `WALL_FACTOR` times that on the wall clock (`timeout`,
    then SIGKILL 5 s later). CPU time, because a timing job may stop the draft job, ptxas
    included, for a while (`tools.sandboxing.slots.Pausable`): stopped time is not ptxas's. Returns
    {variable: real binary} for what was wrapped; nothing where `timeout` or a real ptxas is
    missing."""
    timeout = shutil.which("timeout")
    if timeout is None:
        return {}
    wrapped = {}
    for key, binary in KEYS.items():
        real = real_ptxas(key, binary)
        if real is None:
            continue
        path = os.path.join(workdir, f"{binary}-limited")
        with open(path, "w") as f:
            f.write(
                "#!/bin/sh\n"
                f"# {binary} with a time limit (tools/draft/ptxas_limit.py)\n"
                f"ulimit -t {int(seconds)}\n"
                f"exec {shlex.quote(timeout)} -k 5 {int(seconds) * WALL_FACTOR} "
                f'{shlex.quote(real)} "$@"\n'
            )
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.environ[key] = path
        wrapped[key] = real
    return wrapped
