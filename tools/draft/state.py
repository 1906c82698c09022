"""Plain tensor attributes that Model's forward reads (issue 33: level3/33 keeps its hidden state
in `self.hidden`): where a freshly constructed model holds them, against where Inductor's graph
takes them, and the lines that put them there before `call`.

The drafter runs the reference's forward once before Inductor traces the model
(`tools.draft.steps._reference_and_capture`), so Inductor compiles for the state that forward
leaves, the state of every later call. level3/33's forward reassigns `self.hidden` to a tensor on
the inputs' device (`self.hidden = self.hidden.to(x.device)`), so on a GPU the graph takes a CUDA
tensor; but `model.cuda()` / `.to(device)` moves parameters and buffers only, and on a fresh
model (the verifier's) the attribute is still the constructor's CPU tensor: the draft handed it
to a Triton kernel ("Pointer argument (at 1) cannot be accessed from Triton (cpu tensor?)", the
H200, session 19). The candidate's forward now first puts each plain tensor attribute the graph
reads on the device the graph takes it on, spelled as a forward argument's device
(`self.hidden = self.hidden.to(x.device)`), as Model's own code does: data movement, which the
verifier's audit does not count as compute (`_to_copy` without a dtype change), and a no-op from
the second call on. An attribute whose constructed dtype, shape or strides differ from the
graph's cannot be handed to the graph on the first call (converting it would be PyTorch
compute), nor one that a fresh model does not have: the draft is refused, naming it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from tools.draft.result import DraftUnsupportedError


@dataclasses.dataclass(frozen=True)
class Layout:
    """What a kernel assumes of a tensor it is handed: device, dtype, shape, strides."""

    device: str
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def words(self) -> str:
        shape = "x".join(map(str, self.shape)) or "0-d"
        return f"{self.dtype.removeprefix('torch.')} {shape} tensor (strides {self.stride}) on {self.device}"


def layout(tensor: Any) -> Layout:
    return Layout(
        str(tensor.device), str(tensor.dtype), tuple(tensor.shape), tuple(tensor.stride())
    )


def plain_tensors(model: Any) -> Iterator[tuple[str, Any]]:
    """The plain tensor attributes of `model` and its submodules (not parameters or buffers,
    which `model.to(device)` moves), as (dotted name (`hidden`, `cell.h`), tensor)."""
    import torch

    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                yield (f"{prefix}.{name}" if prefix else name), value


def attribute_layouts(model: Any) -> dict[str, Layout]:
    """`plain_tensors` of `model` with their layouts."""
    return {name: layout(value) for name, value in plain_tensors(model)}


def _same_kernel_view(a: Layout, b: Layout) -> bool:
    """Whether a kernel compiled for `b` reads `a` alike, devices aside: dtype, shape, and the
    strides of the dimensions longer than 1 (a stride of a size-1 dimension is never used)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and all(sa == sb for n, sa, sb in zip(a.shape, a.stride, b.stride, strict=True) if n > 1)
    )


def state_moves(
    constructed: dict[str, Layout],
    now: dict[str, Layout],
    graph_inputs: list[Any],
    call_args: list[str],
    arguments: list[str],
) -> list[str]:
    """The lines that put each plain tensor attribute the graph reads where the graph takes it,
    before `call`: `self.hidden = self.hidden.to(x.device)`, the device spelled as a forward
    argument's (`arguments`, in forward's order) on the graph's device for it, or a parameter's.

    `constructed`: the attributes' layouts on a freshly constructed model
    (`LoadedProblem.constructed`); `now`: after the reference's forward (the names matter);
    `graph_inputs`: Inductor's example inputs; `call_args`: each as Python in forward.
    Raises DraftUnsupportedError for an attribute a fresh model lacks, or holds with another
    dtype, shape or strides than the graph's, or on another device that no argument or
    parameter of the graph is on."""
    import torch

    plain = {f"self.{name}": name for name in (*constructed, *now)}
    moves = []
    for value, expr in zip(graph_inputs, call_args, strict=True):
        name = plain.get(expr)
        if name is None or not isinstance(value, torch.Tensor):
            continue
        graph = layout(value)
        fresh = constructed.get(name)
        if fresh is None:
            raise DraftUnsupportedError(
                f"forward reads {expr}, which a freshly constructed Model does not hold as a "
                "tensor (forward makes it on its first call): one graph cannot serve that call "
                "and the later ones"
            )
        if not _same_kernel_view(fresh, graph):
            raise DraftUnsupportedError(
                f"{expr}: a freshly constructed Model holds a {fresh.words()}, but after one "
                f"forward a {graph.words()}, which Inductor compiled for; one graph cannot serve "
                "the first call and the later ones, and converting it in forward would be "
                "PyTorch compute"
            )
        device = _device_expr(graph.device, graph_inputs, call_args, arguments, plain)
        if device is None:
            if fresh.device != graph.device:
                raise DraftUnsupportedError(
                    f"{expr} is on {fresh.device} in a freshly constructed Model and on "
                    f"{graph.device} in the graph, where no argument or parameter of forward is"
                )
            continue
        moves.append(f"{expr} = {expr}.to({device})")
    return moves


def _device_expr(
    device: str,
    graph_inputs: list[Any],
    call_args: list[str],
    arguments: list[str],
    plain: dict[str, str],
) -> str | None:
    """`x.device` for the first forward argument the graph takes on `device`, else the first
    parameter's or buffer's (`self.fc.weight.device`); None where there is none."""
    import torch

    on_device = {
        expr: value
        for value, expr in zip(graph_inputs, call_args, strict=True)
        if isinstance(value, torch.Tensor) and str(value.device) == device
    }
    for expr in arguments:
        if expr in on_device:
            return f"{expr}.device"
    for expr in on_device:
        if expr.startswith("self.") and expr not in plain:
            return f"{expr}.device"
    return None


def returned_state(reference: Any, model: Any, state: list[str]) -> dict[str, int | None]:
    """Each attribute of `state` (those forward reassigns, by dotted name) with the index of
    forward's output it holds, among the output's tensors in `output_structure`'s order; None
    for one that holds no output. Called just after the reference's forward. Inductor returns
    such a tensor once, as forward's output (the older KernelBench level3/34 returns the
    `self.hidden` it keeps), and the candidate stores that output back; each other attribute
    is an extra output of the graph, after forward's own."""
    flat = _tensors(reference)
    found: dict[str, int | None] = {}
    for name in state:
        prefix, _, attr = name.rpartition(".")
        held = vars(model.get_submodule(prefix)).get(attr)
        found[name] = next((i for i, t in enumerate(flat) if t is held), None)
    return found


def _tensors(value: Any) -> list[Any]:
    """The tensors of forward's output, in `tools.draft.assemble.output_structure`'s order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []
