"""Recurrent layers (nn.RNN, nn.LSTM, nn.GRU) through the drafter (issue 33).

torch.compile refuses them ("Attempted to wrap RNN, GRU, or LSTM"), so while Inductor traces,
each such submodule's call becomes one of this project's custom ops (`tagent::lstm`,
`tagent::gru`, `tagent::rnn`): opaque to Inductor, which keeps it as one extern call
(`torch.ops.tagent.lstm.default(x, h0, c0, [weights...], ...)`) with the input, the initial state
and the layer's flat weights as graph inputs, so the weights are matched to
`self.lstm.weight_ih_l0` etc. like any parameter. The host-code hook (`rewrite.recurrent_in_triton`)
then points that call at `triton_lstm` & co. from tools/kernels/recurrent_kernels.py, whose source the
candidate carries (`assemble.with_source_before_call`).

The ops' fake implementations give Inductor the output shapes (contiguous, as the launchers
allocate them); their real implementations (`torch._VF`, run only where Inductor runs the graph:
the CUDA draft path) are PyTorch's own.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from tools.draft.result import DraftUnsupportedError

OPS = {"lstm": "triton_lstm", "gru": "triton_gru", "rnn": "triton_rnn"}
"""Custom op (`tagent::<name>`) -> the launcher in tools/kernels/recurrent_kernels.py that replaces it."""
RECURRENT_KERNELS = ("_rnn_input_proj_kernel", "_rnn_recurrence_kernel")
"""The `@triton.jit` kernels those launchers run (`DraftResult.kernels`)."""

_ARGS = "Tensor x, Tensor? h0, {c0}Tensor[] weights, int num_layers, bool bidirectional, " \
    "bool batch_first, bool has_bias"  # fmt: skip
_SCHEMAS = {
    "lstm": f"({_ARGS.format(c0='Tensor? c0, ')}) -> (Tensor, Tensor, Tensor)",
    "gru": f"({_ARGS.format(c0='')}) -> (Tensor, Tensor)",
    "rnn": f"({_ARGS.format(c0='')}, str nonlinearity) -> (Tensor, Tensor)",
}


def _zeros_if_none(h: Any, x: Any, layers: int, hidden: int, batch: int) -> Any:
    import torch

    return (
        h if h is not None else torch.zeros(layers, batch, hidden, dtype=x.dtype, device=x.device)
    )


def _eager(name: str, x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias,
           nonlinearity="tanh"):  # fmt: skip
    """PyTorch's own RNN (the op's real implementation), outputs contiguous like the fake's."""
    import torch

    dirs = 2 if bidirectional else 1
    batch = x.shape[0] if batch_first else x.shape[1]
    hidden = weights[1].shape[1]
    h0 = _zeros_if_none(h0, x, num_layers * dirs, hidden, batch)
    flags = (has_bias, num_layers, 0.0, False, bidirectional, batch_first)
    if name == "lstm":
        c0 = _zeros_if_none(c0, x, num_layers * dirs, hidden, batch)
        out = torch._VF.lstm(x, (h0, c0), weights, *flags)
    else:
        fn = torch._VF.gru if name == "gru" else getattr(torch._VF, f"rnn_{nonlinearity}")
        out = fn(x, h0, weights, *flags)
    return tuple(t.contiguous().clone() for t in out)


def _fake(name: str, x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias):
    dirs = 2 if bidirectional else 1
    hidden = weights[1].shape[1]
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    out = x.new_empty(
        (batch, steps, dirs * hidden) if batch_first else (steps, batch, dirs * hidden)
    )
    states = 2 if name == "lstm" else 1
    return (out, *(x.new_empty((num_layers * dirs, batch, hidden)) for _ in range(states)))


@functools.cache
def register_ops() -> None:
    """Define `tagent::lstm`, `tagent::gru`, `tagent::rnn` (once a process)."""
    import torch

    for name, schema in _SCHEMAS.items():
        if name == "lstm":

            def real(x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias):
                return _eager("lstm", x, h0, c0, weights, num_layers, bidirectional,
                              batch_first, has_bias)  # fmt: skip

            def fake(x, h0, c0, weights, num_layers, bidirectional, batch_first, has_bias):
                return _fake("lstm", x, h0, c0, weights, num_layers, bidirectional,
                             batch_first, has_bias)  # fmt: skip
        elif name == "gru":

            def real(x, h0, weights, num_layers, bidirectional, batch_first, has_bias):
                return _eager("gru", x, h0, None, weights, num_layers, bidirectional,
                              batch_first, has_bias)  # fmt: skip

            def fake(x, h0, weights, num_layers, bidirectional, batch_first, has_bias):
                return _fake("gru", x, h0, None, weights, num_layers, bidirectional,
                             batch_first, has_bias)  # fmt: skip
        else:

            def real(x, h0, weights, num_layers, bidirectional, batch_first, has_bias,
                     nonlinearity):  # fmt: skip
                return _eager("rnn", x, h0, None, weights, num_layers, bidirectional,
                              batch_first, has_bias, nonlinearity)  # fmt: skip

            def fake(x, h0, weights, num_layers, bidirectional, batch_first, has_bias,
                     nonlinearity):  # fmt: skip
                return _fake("rnn", x, h0, None, weights, num_layers, bidirectional,
                             batch_first, has_bias)  # fmt: skip

        op = torch.library.custom_op(f"tagent::{name}", real, mutates_args=(), schema=schema)
        op.register_fake(fake)


_FORWARD = """
def forward(self, input, hx=None):
    unbatched = input.dim() == 2  # (L, H_in) and a state without its batch dimension
    if unbatched:
        input = input.unsqueeze({batch_dim})
    h0, c0 = hx if IS_LSTM and hx is not None else (hx, None)
    if unbatched:
        h0 = h0.unsqueeze(1) if h0 is not None else None
        c0 = c0.unsqueeze(1) if c0 is not None else None
    weights = [getattr(self, n) for n in NAMES]
    state = (h0, c0) if IS_LSTM else (h0,)
    outs = OP(input, *state, weights, {layers}, BIDIRECTIONAL, BATCH_FIRST, HAS_BIAS, *EXTRA)
    if unbatched:
        outs = (outs[0].squeeze({batch_dim}), *(s.squeeze(1) for s in outs[1:]))
    return (outs[0], (outs[1], outs[2])) if IS_LSTM else (outs[0], outs[1])
"""
"""The swapped-in forward. Its ints are literals in the code: Dynamo (dynamic=True) made a
closure's int symbolic, and the candidate's docstring then listed an introspection guard
(`...__closure__[4].cell_contents == 2`) among the sizes it assumes."""


def _traced_forward(module: Any) -> Any:
    """A forward for `module` (an nn.RNN/LSTM/GRU) that calls the custom op with the module's
    settings as constants (not module attributes, which Dynamo may make symbolic)."""
    import torch

    mode = module.mode
    name = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn", "RNN_RELU": "rnn"}[mode]
    namespace = {
        "OP": getattr(torch.ops.tagent, name),
        "IS_LSTM": name == "lstm",
        "NAMES": tuple(module._flat_weights_names),
        "BIDIRECTIONAL": bool(module.bidirectional),
        "BATCH_FIRST": bool(module.batch_first),
        "HAS_BIAS": bool(module.bias),
        "EXTRA": ("tanh" if mode == "RNN_TANH" else "relu",) if name == "rnn" else (),
    }
    code = _FORWARD.format(layers=int(module.num_layers), batch_dim=0 if module.batch_first else 1)
    exec(compile(code, f"<tagent {name} forward>", "exec"), namespace)
    return namespace["forward"]


def _check_supported(path: str, module: Any) -> None:
    if getattr(module, "proj_size", 0):
        raise DraftUnsupportedError(
            f"{path}: LSTM with proj_size={module.proj_size} is not supported by the recurrent "
            "lowering (tools/kernels/recurrent_kernels.py)"
        )
    if module.dropout and module.num_layers > 1 and module.training:
        raise DraftUnsupportedError(
            f"{path}: dropout={module.dropout} between recurrent layers in training mode is "
            "stochastic (a fresh mask per call), so no draft can match it; the recurrent lowering "
            "supports dropout=0"
        )
    if module.mode not in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"):
        raise DraftUnsupportedError(f"{path}: recurrent mode {module.mode!r} is not supported")


@contextlib.contextmanager
def recurrent_layers_as_ops(model: Any) -> Iterator[int]:
    """While Inductor traces `model`, every nn.RNN/LSTM/GRU submodule calls a `tagent::` custom
    op instead (its class swapped for one whose forward does; restored afterwards). Yields how
    many were swapped. Raises `DraftUnsupportedError` for a layer the lowering cannot match."""
    import torch

    layers = [(p, m) for p, m in model.named_modules() if isinstance(m, torch.nn.RNNBase)]
    for path, module in layers:
        _check_supported(path or "Model", module)
    if layers:
        register_ops()
    swapped = []
    try:
        for _path, module in layers:
            original = type(module)
            traced = type(
                f"Traced{original.__name__}",
                (torch.nn.Module,),
                {"forward": _traced_forward(module), "flatten_parameters": lambda self: None},
            )
            module.__class__ = traced
            swapped.append((module, original))
        yield len(swapped)
    finally:
        for module, original in swapped:
            module.__class__ = original
