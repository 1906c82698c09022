"""Ways to run code after `forward` returns (profile/trace functions, monitoring tools, Triton
runtime hooks, torch modes left on the stack, signal handlers and the like), listed so that the
candidate's job can compare them before and after each window in which the candidate's code
ran: a hook it left behind is tampering. Runs in the candidate's job.
"""

from __future__ import annotations

import sys
import threading

import torch


def hooks() -> list[str]:
    """Ways to run code after `forward` returns, while the harness reads and exports its outputs:
    profile and trace functions (per process and for new threads), sys.monitoring tools, and
    torch function/dispatch modes left on the stack. Checked after every forward; a hook that
    was not there before the candidate was imported is tampering (a profile hook can rewrite an
    output after the audit closed)."""
    found = []
    if sys.getprofile() is not None:
        found.append("a profile function (sys.setprofile)")
    if sys.gettrace() is not None:
        found.append("a trace function (sys.settrace)")
    for name, what in (
        ("getprofile", "a thread profile function"),
        ("gettrace", "a thread trace function"),
    ):
        get = getattr(threading, name, None)
        if get is not None and get() is not None:
            found.append(f"{what} (threading.set{name[3:]})")
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in range(6):
            try:
                if monitoring.get_tool(tool) is not None:
                    found.append(f"a sys.monitoring tool ({tool})")
            except Exception:  # noqa: BLE001
                pass
    try:
        from triton import knobs

        for name in (
            "launch_enter_hook",
            "launch_exit_hook",
            "kernel_load_start_hook",
            "kernel_load_end_hook",
            "jit_cache_hook",
            "jit_post_compile_hook",
            "add_stages_inspection_hook",
        ):
            hook = getattr(knobs.runtime, name, None)
            if hook is not None:
                # Triton's default is an empty HookChain: the object and its calls identify it.
                calls = [id(c) for c in getattr(hook, "calls", ())]
                found.append(
                    f"a Triton runtime hook (triton.knobs.runtime.{name}: {id(hook):x} {calls})"
                )
    except Exception:  # noqa: BLE001 - an older Triton without knobs
        pass
    found += _interrupt_hooks()
    # Counts, not presence: the CPU device shim keeps a function mode of the harness's own on
    # the stack, so a change of the count (a mode added, or the harness's popped) is the sign.
    try:
        found.append(f"{torch._C._len_torch_function_stack()} torch function mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    try:
        found.append(f"{torch._C._len_torch_dispatch_stack()} torch dispatch mode(s) on the stack")
    except Exception:  # noqa: BLE001
        pass
    return found


def _interrupt_hooks() -> list[str]:
    """Code that runs *between* the harness's steps, wherever the interpreter happens to be:
    signal handlers and armed interval timers, garbage-collector callbacks, and the hooks Python
    calls on errors and warnings the harness's own code may raise. Identities, so that a hook
    installed and a hook replaced both show."""
    import gc
    import signal as _py_signal
    import warnings

    found = []
    try:
        import _signal

        for sig in range(1, _py_signal.NSIG):
            try:
                handler = _signal.getsignal(sig)
            except (ValueError, OSError):
                continue
            if callable(handler):
                found.append(f"a handler of signal {sig} ({id(handler):x})")
        for which in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
            if hasattr(_signal, which) and any(_signal.getitimer(getattr(_signal, which))):
                found.append(f"an armed interval timer ({which})")
    except Exception:  # noqa: BLE001 - a platform without them
        pass
    found += [f"a garbage-collector callback ({id(c):x})" for c in list(gc.callbacks)]
    for owner, name in (
        (sys, "excepthook"),
        (sys, "unraisablehook"),
        (sys, "displayhook"),
        (threading, "excepthook"),
        (warnings, "showwarning"),
        (warnings, "_showwarnmsg"),
        (warnings, "formatwarning"),
    ):
        fn = getattr(owner, name, None)
        found.append(f"{getattr(owner, '__name__', owner)}.{name} ({id(fn):x})")
    return found
