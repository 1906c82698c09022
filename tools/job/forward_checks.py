"""What the candidate's job checks around each forward, on the arguments and outputs it handles:
inputs the candidate changed, outputs that alias an input, outputs that are not plain tensors,
and the previous run's buffers refilled with the next trial's values (a result cached by data
pointer then goes stale). These run ONLY inside sandbox job processes.
"""

from __future__ import annotations

import torch


def mutated(args: list, base: list) -> list[int]:
    return [
        i
        for i, (a, k) in enumerate(zip(args, base))
        if isinstance(a, torch.Tensor) and not _same(a, k)
    ]


def aliased(args: list, outputs: list) -> list[int]:
    in_ptrs = {
        a.untyped_storage().data_ptr() for a in args if type(a) is torch.Tensor and a.numel()
    }
    return [
        j
        for j, o in enumerate(outputs)
        if isinstance(o, torch.Tensor)
        and o.layout == torch.strided
        and not o.is_nested
        and o.numel()
        and o.untyped_storage().data_ptr() in in_ptrs
    ]


def refill(prev: list | None, new: list) -> list | None:
    """The previous run's input buffers holding the new trial's values (None when they do not
    fit). The first run of each later trial reuses the same memory with different values, so a
    cache keyed by data pointer always hits, and returns a stale result."""
    if prev is None or len(prev) != len(new):
        return None
    for a, b in zip(prev, new, strict=True):
        if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
            return None
        if isinstance(a, torch.Tensor) and (
            type(a) is not torch.Tensor
            or a.shape != b.shape
            or a.dtype != b.dtype
            or a.stride() != b.stride()
            or a.device != b.device
        ):
            return None
    out = []
    for a, b in zip(prev, new, strict=True):
        if isinstance(a, torch.Tensor):
            with torch.no_grad():
                a.copy_(b)
            out.append(a)
        else:
            out.append(b)
    return out


def checked_outputs(flat: list, tamper: list[str]) -> list:
    """Only plain tensors (and numbers) cross to the parent. A tensor subclass can compute its
    values lazily when the harness reads it (outside the audit), so it is a cheat; any other
    object becomes a string naming its type, which the comparison reports."""
    out = []
    for j, o in enumerate(flat):
        if type(o) in (torch.Tensor, torch.nn.Parameter):
            out.append(o)
        elif isinstance(o, torch.Tensor):
            msg = f"returning a torch.Tensor subclass ({type(o).__name__}) as output {j}"
            if msg not in tamper:
                tamper.append(msg)
            out.append(f"<{type(o).__name__} tensor subclass>")
        elif o is None or type(o) in (int, float, bool, str):
            out.append(o)
        else:
            out.append(f"<{type(o).__name__} object>")
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values (NaN equal to NaN), without full-size temporaries when they are equal."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):
        return True
    if not a.is_floating_point():
        return False
    from tools.checks.compare import allclose

    return allclose(a, b, 0.0, 0.0)
