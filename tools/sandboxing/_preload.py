"""Imported once by the forkserver so every job process starts with torch and triton loaded.

Nothing here may initialise CUDA (a forked child cannot use a CUDA context made by its parent).
"""

import os

import numpy  # noqa: F401
import torch  # noqa: F401
import torch.nn  # noqa: F401
import torch.utils._python_dispatch  # noqa: F401
import triton  # noqa: F401
import triton.language  # noqa: F401
import triton.runtime.interpreter  # noqa: F401

import tools.checks.audit  # noqa: F401, E402
import tools.checks.integrity  # noqa: F401, E402
import tools.checks.op_profiler  # noqa: F401, E402
import tools.job.devshim  # noqa: F401, E402
import tools.job.guard  # noqa: F401
import tools.job.handover  # noqa: F401, E402
import tools.job.judge  # noqa: F401, E402
import tools.job.worker  # noqa: F401

# KernelLLM's Inductor-style outputs import these; importing them costs ~1.6 s, so do it once.
# Only for the CPU (interpreter) forkserver: on a GPU machine importing Inductor's runtime can
# initialise CUDA, and a forked child cannot use a CUDA context made by its parent.
if os.environ.get("TRITON_INTERPRET") == "1":
    try:
        import torch._inductor.runtime.triton_heuristics  # noqa: F401
        from torch._inductor.runtime import triton_helpers  # noqa: F401
    except Exception:
        pass
elif os.environ.get("TRITON_AGENT_GPU_PRELOAD", "1") != "0":
    # Every job imports torch._dynamo before its integrity snapshot (tools/job/worker.py); on the
    # H200 that import alone took 5.4 s of a 6 s job start. Measured there: it does not
    # initialise CUDA. TRITON_AGENT_GPU_PRELOAD=0 turns this off.
    try:
        import torch._dynamo  # noqa: F401
    except Exception:
        pass
try:
    import tools.compile.aot  # noqa: F401
except Exception:
    pass

# Libraries of the environment that add an audit hook when first imported: imported here, before
# any job is locked down, or an honest candidate whose imports reach them later is refused for
# "adding an audit hook" (the guard cannot tell their hook from a candidate's). filelock >= 3.20
# does so on Python 3.12+ (`filelock._core._fork`), and torch, triton and Hugging Face libraries
# import it lazily: every Liger-Kernel op was refused so on the H200 (session 15).
AUDIT_HOOK_LIBRARIES = ("filelock",)
for _name in AUDIT_HOOK_LIBRARIES:
    try:
        __import__(_name)
    except Exception:
        pass

# Triton keys its compile cache with a hash of its own installation, libtriton.so included
# (~500 MB): ~0.4 s per process, paid by each GPU job's first launch and each ahead-of-time
# compile. It reads files only (no driver, no CUDA); computed once here, every forked job
# inherits the memoised value.
try:
    from triton.runtime.cache import triton_key
except ImportError:  # older Triton kept it in the compiler module
    try:
        from triton.compiler.compiler import triton_key
    except ImportError:
        triton_key = None
if triton_key is not None:
    try:
        triton_key()
    except Exception:
        pass
