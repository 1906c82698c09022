"""Integrity: what the candidate must not replace in its process (job side).

`Integrity` snapshots the harness's functions, the timers and torch's entry points (the list:
`tools.checks.integrity_targets`). The candidate's job compares it after the import, the
constructor and every forward; a difference is tampering. Beside it in the candidate's job: the
whole process's snapshot (`tools.checks.process_snapshot`) and the hooks that would run code
after forward returns (`tools.checks.run_hooks`).
"""

from __future__ import annotations

import os
import types

from tools.checks.integrity_targets import HARNESS_MODULES, integrity_targets


def _names(namespace: dict) -> frozenset[str]:
    # dunders excluded: Python adds `__warningregistry__` to a module that warned
    return frozenset(n for n in namespace if not n.startswith("__"))


def _module_keys() -> dict[str, frozenset[str]]:
    import importlib

    out = {}
    for modname in HARNESS_MODULES:
        try:
            out[modname] = _names(vars(importlib.import_module(modname)))
        except Exception:  # noqa: BLE001 - a module this build lacks
            continue
    return out


def _get(owner: object, name: str) -> object:
    if isinstance(owner, type):
        return owner.__dict__.get(name, getattr(owner, name, None))
    return unwrap_interpreter(getattr(owner, name, None))


_INTERPRETER_FILE = os.path.join("triton", "runtime", "interpreter.py")


def interpreter_own(value: object) -> bool:
    """A `triton.language` name the interpreter itself re-pointed while running a launch (and
    left so): its own functions, partials of them, `print`/`range` (static_print, static_range)."""
    import builtins
    import functools

    if isinstance(value, functools.partial):
        value = value.func
    if value is builtins.print or value is builtins.range:
        return True
    if isinstance(value, type):
        return value.__module__ == "triton.runtime.interpreter"
    code = getattr(value, "__code__", None)
    return (
        isinstance(value, types.FunctionType)
        and code is not None
        and code.co_filename.endswith(_INTERPRETER_FILE)
    )


def unwrap_interpreter(value: object) -> object:
    """The Triton interpreter wraps `triton.language` builtins in lambdas of its own (and keeps
    them after a launch); what it wraps is what must not change."""
    for _ in range(8):
        code = getattr(value, "__code__", None)
        kw = getattr(value, "__kwdefaults__", None)
        if (
            isinstance(value, types.FunctionType)
            and code is not None
            and code.co_filename.endswith(_INTERPRETER_FILE)
            and isinstance(kw, dict)
            and "member" in kw
        ):
            value = kw["member"]
        else:
            break
    return value


def _fingerprint(value: object) -> tuple:
    """Identity of a value plus the mutable insides that would change its behaviour: a function's
    code and defaults (`f.__code__ = ...` keeps the object), a set's or dict's contents."""
    if isinstance(value, types.MethodType):  # a fresh object on every attribute access
        return ("method", id(value.__self__)) + _fingerprint(value.__func__)
    fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    parts: tuple = (id(value),)
    if isinstance(fn, types.FunctionType):
        parts += (id(fn.__code__), repr(fn.__defaults__), repr(fn.__kwdefaults__))
    elif isinstance(value, (dict, list, set, frozenset)):
        parts += (repr(sorted(map(repr, value.items() if isinstance(value, dict) else value))),)
    return parts


class Integrity:
    """A snapshot of the harness, timers and torch entry points the candidate must not patch.

    Checked after the candidate is imported and after every forward: replacing a timer (to fake
    speed), the comparison or the audit (to fake correctness) or the guard's settings is a cheat
    even when it changes nothing the verifier relies on (the comparison runs in the parent).
    """

    def __init__(self, problem: types.ModuleType | None = None) -> None:
        targets = integrity_targets()
        self._problem = problem
        if problem is not None:
            # The problem's own functions (`get_inputs` is called by the harness every trial)
            targets += [
                (f"the problem's {n}", problem, n)
                for n, v in vars(problem).items()
                if callable(v) and not n.startswith("__")
            ]
        self._values = [
            (label, owner, name, _fingerprint(_get(owner, name))) for label, owner, name in targets
        ]
        self._keys = _module_keys()
        if problem is not None:
            self._keys["the problem module"] = _names(vars(problem))

    def changed(self) -> list[str]:
        out = []
        now_keys = _module_keys()
        if self._problem is not None:
            now_keys["the problem module"] = _names(vars(self._problem))
        for modname, keys in now_keys.items():
            before = self._keys.get(modname)
            if before is not None and keys != before:
                added = sorted(keys - before)[:3]
                out.append(f"the globals of {modname} (names added: {added})")
        for label, owner, name, fp in self._values:
            try:
                now = _fingerprint(_get(owner, name))
            except Exception:
                now = ()
            if now != fp and not (
                label.startswith("triton.language") and interpreter_own(_get(owner, name))
            ):
                out.append(label)
        return out
