"""The whole process's snapshot (`ProcessSnapshot`): every callable of every module loaded before
the candidate, by identity, compared by the candidate's job after each window in which the
candidate's code ran (import, constructor, each forward, each release of outputs). Runs in the
candidate's job.
"""

from __future__ import annotations

import os
import sys
import types

from tools.checks.integrity import interpreter_own, unwrap_interpreter

_MISSING = object()


def _rebound_by_import(module: object, name: str) -> bool:
    """Whether `module` is what the import system binds as `name` after `import name`: the
    module registered under that name, loaded from a file outside the job's directory (where
    a candidate's own files are). A package attribute that was a re-export of another module
    (the original keeps its own entries under its own name) is then the file's module."""
    if not isinstance(module, types.ModuleType) or sys.modules.get(name) is not module:
        return False
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if getattr(module, "__name__", None) != name or not isinstance(origin, str):
        return False
    if not os.path.isfile(origin) or getattr(module, "__file__", None) != origin:
        return False
    where = os.path.realpath(origin)
    return where.startswith(_INSTALLED) and not where.startswith(
        os.path.realpath(os.getcwd()) + os.sep
    )


def _installed_dirs() -> tuple[str, ...]:
    """Where installed Python code lives (the standard library, site-packages), resolved: a file
    the candidate wrote elsewhere (its directory, /tmp) is not a library's."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


_INSTALLED = _installed_dirs()


class ProcessSnapshot:
    """Every callable of every module loaded before the candidate (module globals, and the
    methods of the classes each module defines), by identity.

    The harness calls into many modules after the import (`random.seed` and `numpy.random.seed`
    when it makes a trial's inputs, `pickle.loads` and `Connection.recv_bytes` when it reads the
    parent's message, the problem's `torch` global...). Listing them one by one only moves an
    adversary to the next; so nothing that existed before the candidate ran may be re-pointed,
    anywhere. Python raises no audit event for a module or class attribute set, so this is a
    check, made after every window in which the candidate's code ran (import, constructor, each
    forward, each release of outputs): ~125k entries with torch, Triton and numpy loaded, about
    0.15 s to take and a few milliseconds to check (CPU). Modules imported later are the
    candidate's own business (the harness imports what it needs before the snapshot)."""

    def __init__(self) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated module attributes warn when touched
            self._take()

    def _take(self) -> None:
        entries: list[tuple[object, str, object, str]] = []
        classes: list[tuple[type, object, frozenset[str], str]] = []
        # `pkg.name` bound to a module that is not `sys.modules["pkg.name"]` (a re-export, e.g.
        # torch.onnx.symbolic_helper -> torch.onnx._internal...symbolic_helper): a later
        # `import pkg.name` by any library rebinds it to the module of that file
        # (`_rebound_by_import`). Liger-Kernel's ops were refused for exactly that on the H200.
        aliases: set[tuple[int, str]] = set()
        for name, mod in list(sys.modules.items()):
            try:
                d = mod.__dict__
            except Exception:  # noqa: BLE001 - a lazy or odd module object
                continue
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                # callables, and modules bound as globals (`problem.torch = proxy`)
                if k[:2] == "__" or not (callable(v) or isinstance(v, types.ModuleType)):
                    continue
                entries.append((d, k, v, name))
                if isinstance(v, types.ModuleType) and f"{name}.{k}" not in sys.modules:
                    aliases.add((id(d), k))
                if isinstance(v, type) and getattr(v, "__module__", None) == name:
                    cd = v.__dict__
                    classes.append((v, cd, frozenset(cd), f"{name}.{k}"))
                    for ck, cv in list(cd.items()):
                        # dunders too (a context manager's `__exit__` runs in the harness)
                        if callable(cv) or isinstance(cv, (staticmethod, classmethod, property)):
                            entries.append((cd, ck, cv, f"{name}.{k}"))
        self._entries = entries
        self._classes = classes
        self._aliases = aliases

    def __len__(self) -> int:
        return len(self._entries)

    def rebased(self) -> ProcessSnapshot:
        """The same entries with their current values as the reference: after the harness's own
        patches (the launch recorder's `JITFunction.run`), made right after a clean check."""
        other = ProcessSnapshot.__new__(ProcessSnapshot)
        other._entries = [(d, k, d.get(k, _MISSING), where) for d, k, _v, where in self._entries]
        other._classes = [(c, cd, frozenset(cd), w) for c, cd, _k, w in self._classes]
        other._aliases = self._aliases
        return other

    def changed(self, limit: int = 5) -> list[str]:
        out: list[str] = []
        for d, k, v, where in self._entries:
            now = d.get(k, _MISSING)
            if now is v:
                continue
            if where.startswith("triton.language") and interpreter_own(unwrap_interpreter(now)):
                continue
            if unwrap_interpreter(now) is v:
                continue
            if (id(d), k) in self._aliases and _rebound_by_import(now, f"{where}.{k}"):
                continue
            out.append(f"{where}.{k}")
            if len(out) >= limit:
                return out
        # A name added to a class that shadows what its bases give (`Connection.recv_bytes`
        # set on the subclass, a `layout` property given to `nn.Parameter`): the lookup from
        # the harness's code now finds the candidate's.
        for cls, cd, keys, where in self._classes:
            if len(cd) == len(keys):  # a removed callable shows above; additions change the size
                continue
            for k in set(cd) - keys:
                if k in ("__annotations__", "__abstractmethods__", "_abc_impl"):
                    continue  # Python adds these on its own (`__annotations__` when read)
                if where.startswith("triton.language") and interpreter_own(cd.get(k)):
                    continue  # the interpreter's own (tensor.__repr__ while a launch runs)
                inherited = next((vars(b)[k] for b in cls.__mro__[1:] if k in vars(b)), _MISSING)
                if inherited is not _MISSING and cd.get(k) is not inherited:
                    out.append(f"{where}.{k} (shadowing {cls.__mro__[1].__name__}'s)")
                    if len(out) >= limit:
                        return out
        return out
