"""Audited runs of the candidate's code (job-process side): `audited()` for forward (the
dispatch mode and the launch counter of `tools.checks.audit_mode`), `constructor_audited()` for
the constructor and the weight copy (the constructor rule, `tools.checks.constructor_audit`).
Each also watches the ways out of torch that no dispatch mode sees: numpy, DLPack and Python
round-trips of a tensor's values.
"""

from __future__ import annotations

import contextlib

import torch

from tools.checks.audit_mode import AuditMode, LaunchCounter
from tools.checks.constructor_audit import ConstructorAuditMode


# Ways out of torch that the dispatch mode cannot see: compute in numpy or plain Python on the
# tensor's values, then wrap the result as a tensor again.
def _escapes() -> list[tuple[object, str]]:
    import torch.utils.dlpack

    return [
        (torch.Tensor, "numpy"),
        (torch.Tensor, "__array__"),
        (torch.Tensor, "tolist"),
        (torch.Tensor, "__dlpack__"),
        (torch.Tensor, "__cuda_array_interface__"),
        (torch.UntypedStorage, "tolist"),
        (torch, "from_numpy"),
        (torch, "frombuffer"),
        (torch, "from_dlpack"),
        (torch.utils.dlpack, "from_dlpack"),
        (torch.utils.dlpack, "to_dlpack"),
        (torch, "save"),
        (torch, "load"),
    ]


def _toolchain_dirs() -> tuple[str, ...]:
    import os

    import triton

    return tuple(
        os.path.dirname(os.path.abspath(m.__file__)) + os.sep
        for m in (triton, torch, numpy_module())
    )


def numpy_module():
    import numpy

    return numpy


_TOOLCHAIN: list[tuple[str, ...]] = []


def _called_by_toolchain() -> bool:
    """Inside a launch, whether the round-trip was asked for by Triton's (or torch's, numpy's)
    own code: the interpreter moves a launch's arguments through numpy. Python of anyone else
    running inside a launch (a `constexpr_function`, a helper the kernel body calls under the
    interpreter) is the candidate's, and its round-trips are compute like anywhere else."""
    import sys

    if not _TOOLCHAIN:
        _TOOLCHAIN.append(_toolchain_dirs())
    frame = sys._getframe(2)  # <- the wrapper <- its caller
    name = frame.f_code.co_filename if frame is not None else ""
    return name.startswith(_TOOLCHAIN[0])


@contextlib.contextmanager
def _watch_escapes(mode: AuditMode, launches: LaunchCounter):
    saved = []
    for owner, name in _escapes():
        if not hasattr(owner, name) and name not in vars(owner):
            continue
        own = name in vars(owner)
        original = vars(owner)[name] if own else getattr(owner, name)
        label = f"{name} (numpy/DLPack/Python round-trip outside Triton)"

        if isinstance(original, property):

            def getter(self, __get=original.fget, __label=label):
                if launches.depth == 0 or not _called_by_toolchain():
                    mode.compute[__label] += 1
                return __get(self)

            wrapper: object = property(getter)
        else:

            def wrapper(*args, __original=original, __label=label, **kwargs):
                if launches.depth == 0 or not _called_by_toolchain():
                    mode.compute[__label] += 1
                return __original(*args, **kwargs)

        saved.append((owner, name, own, vars(owner).get(name)))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, own, value in reversed(saved):
            if own:
                setattr(owner, name, value)
            else:
                delattr(owner, name)


@contextlib.contextmanager
def audited(poison: bool = True):
    """Context for running one forward: yields (AuditMode, LaunchCounter)."""
    with LaunchCounter() as launches:
        mode = AuditMode(poison=poison, launches=launches)
        launches.mode = mode
        with mode, _watch_escapes(mode, launches):
            yield mode, launches


@contextlib.contextmanager
def constructor_audited():
    """Context for the constructor and the weight copy: yields (ConstructorAuditMode,
    LaunchCounter). `mode.folds` is what the constructor rule refuses; `mode.compute` holds only
    what `AuditMode` refuses anywhere (custom operators, escapes of weights to numpy)."""
    with LaunchCounter() as launches:
        mode = ConstructorAuditMode(launches=launches)
        launches.mode = mode
        with mode, _watch_constructor_escapes(mode, launches):
            try:
                yield mode, launches
            finally:
                pass


@contextlib.contextmanager
def _watch_constructor_escapes(mode: ConstructorAuditMode, launches: LaunchCounter):
    """numpy/DLPack/Python round-trips in the constructor: tables built in numpy and brought in
    (`torch.from_numpy`) are constants; a seed-dependent tensor (a weight) going out to numpy or
    Python is a fold done outside torch."""
    saved = []
    for owner, name in _escapes():
        if name in ("from_numpy", "frombuffer", "from_dlpack", "load", "save"):
            continue
        if not hasattr(owner, name) and name not in vars(owner):
            continue
        own = name in vars(owner)
        original = vars(owner)[name] if own else getattr(owner, name)
        label = f"the weights taken out of torch in the constructor ({name})"

        def seeded(args: tuple) -> bool:
            return any(isinstance(a, torch.Tensor) and mode.of(a) for a in args)

        if isinstance(original, property):

            def getter(self, __get=original.fget, __label=label):
                if launches.depth == 0 and seeded((self,)):
                    mode.folds[__label] += 1
                return __get(self)

            wrapper: object = property(getter)
        else:

            def wrapper(*args, __original=original, __label=label, **kwargs):
                if launches.depth == 0 and seeded(args):
                    mode.folds[__label] += 1
                return __original(*args, **kwargs)

        saved.append((owner, name, own, vars(owner).get(name)))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, own, value in reversed(saved):
            if own:
                setattr(owner, name, value)
            else:
                delattr(owner, name)
