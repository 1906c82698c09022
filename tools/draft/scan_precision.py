"""Exponentials of cumulative sums in fp64 (issue 33: Mamba2's selective scan).

Mamba2's SSD exponentiates differences of cumulative sums: `exp(A_cumsum[..., -1:] - A_cumsum)`
and `exp(segsum(A))` with `segsum = cumsum[..., :, None] - cumsum[..., None, :]`. With A ~ randn
the sums reach |x| ~ 20-45 (KernelBench's level3/49 at its published size: outputs up to 3e21),
where an fp32 sum carries an absolute error of a few ulps of 16-32 (~1e-6 each), and exp turns
that absolute error into the same relative error of every term. The outputs that nearly cancel
then differ from the exact value by more than the tolerance: on the H200 PyTorch's own fp32
value was outside atol = rtol = 1e-4 of an fp64 reference at 12,610 of 16.8M elements. Inductor's
cumulative sum is a tree scan, not PyTorch's sequential one, so its errors are other draws of the
same size, and the fp64 rule (docs/verification.md) refused 3,159 elements where the draft's
error was more than three times PyTorch's own: a `mismatch` with max abs err 4e13-4e14, with
the GEMMs in tf32x3 or in plain fp32 alike (the exponents carry the error, not the GEMMs).

So the drafter computes such a chain in fp64: each fp32 `cumsum` whose values reach an `exp`
through index, pad, add/sub/mul and mask ops is computed in fp64 from the fp32 input, those ops
and the `exp` in fp64, and the `exp`'s result is rounded to fp32 once (any other use of the fp64
values gets them rounded to fp32, as the reference had them). Every term is then the correctly
rounded fp32 value of its exact exponential, and the draft's error is PyTorch's without its
largest part (on the CPU, a 256-batch copy of level3/49: 99.9th percentile of the relative
error against fp64 3.1e-5 against PyTorch's 1.2e-4). The data stays fp32; only a scan's
exponents (b*h*L values for level3/49) are fp64. Applied as Inductor's post-grad custom pass,
on the ATen graph, where every op and dtype is explicit.
"""

from __future__ import annotations

from typing import Any


def _region_ops() -> frozenset:
    """ATen ops through which a cumulative sum's fp64 values flow on to an `exp`: indexing and
    layout, padding, masking and the arithmetic of segment sums."""
    import torch

    aten = torch.ops.aten
    names = (
        "cumsum.default",
        "select.int",
        "slice.Tensor",
        "constant_pad_nd.default",
        "unsqueeze.default",
        "squeeze.dim",
        "squeeze.dims",
        "reshape.default",
        "view.default",
        "_unsafe_view.default",
        "permute.default",
        "expand.default",
        "clone.default",
        "cat.default",
        "sub.Tensor",
        "add.Tensor",
        "mul.Tensor",
        "mul.Scalar",
        "neg.default",
        "where.self",
        "masked_fill.Scalar",
    )
    ops = []
    for name in names:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(aten, packet, None), overload, None)
        if op is not None:
            ops.append(op)
    return frozenset(ops)


def _dtype(node: Any) -> Any:
    value = node.meta.get("val") if hasattr(node, "meta") else None
    return getattr(value, "dtype", None)


def _tensor_inputs(node: Any) -> list[Any]:
    import torch.fx

    found: list[Any] = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


def exponents_in_fp64(graph: Any) -> int:
    """Rewrite `graph` (an ATen FX graph with fake-tensor `val`s) so that every fp32 cumulative
    sum whose values reach an `exp` is computed, with the ops between, in fp64, and the `exp`
    rounded to fp32. Returns the number of `exp` nodes rewritten (0: the graph is unchanged)."""
    import torch

    aten, prims = torch.ops.aten, torch.ops.prims
    region_ops = _region_ops()
    seeds = [
        n
        for n in graph.nodes
        if n.op == "call_function"
        and n.target is aten.cumsum.default
        and _dtype(n) == torch.float32
        and "dtype" not in n.kwargs
    ]
    if not seeds:
        return 0
    region: set[Any] = set()
    todo = list(seeds)
    while todo:  # every node a cumulative sum's values flow into through the ops above
        node = todo.pop()
        if node in region:
            continue
        region.add(node)
        todo += [u for u in node.users if u.op == "call_function" and u.target in region_ops]
    exps = [
        u
        for n in region
        for u in n.users
        if u.target is aten.exp.default and _dtype(u) == torch.float32
    ]
    exps = list(dict.fromkeys(exps))
    useful: set[Any] = set()  # the region's nodes that an exp's argument depends on
    todo = [e.args[0] for e in exps]
    while todo:
        node = todo.pop()
        if node in useful or node not in region:
            continue
        useful.add(node)
        todo += [a for a in _tensor_inputs(node) if a in region]
    if not useful:
        return 0
    changed: set[Any] = set(useful) | set(exps)

    def to_fp(node: Any, dtype: Any) -> Any:
        cast = graph.call_function(prims.convert_element_type.default, (node, dtype))
        changed.add(cast)
        return cast

    for node in [n for n in graph.nodes if n in useful]:
        if node.target is aten.cumsum.default and node.args[0] not in useful:
            with graph.inserting_before(node):
                node.replace_input_with(node.args[0], to_fp(node.args[0], torch.float64))
        outside = [u for u in node.users if u not in useful and u not in exps and u not in changed]
        if outside:  # other uses read the values at the dtype they had
            with graph.inserting_after(node):
                cast = to_fp(node, torch.float32)
            for user in outside:
                user.replace_input_with(node, cast)
    for node in exps:
        with graph.inserting_after(node):
            cast = to_fp(node, torch.float32)
        node.replace_all_uses_with(cast, delete_user_cb=lambda user, cast=cast: user is not cast)
    _refresh_vals(graph, changed)
    return len(exps)


def _refresh_vals(graph: Any, nodes: set[Any]) -> None:
    """The fake-tensor `val` of each of `nodes` computed again from its inputs' (in graph order):
    Inductor's later passes and lowerings read dtypes and shapes from it."""
    import torch.fx
    from torch._subclasses.fake_tensor import FakeTensor

    fake_mode = next(
        (v.fake_mode for n in graph.nodes if isinstance(v := n.meta.get("val"), FakeTensor)),
        None,
    )
    if fake_mode is None:
        raise RuntimeError("exponents_in_fp64: the graph carries no fake tensors")
    with fake_mode:
        for node in graph.nodes:
            if node in nodes:
                args, kwargs = torch.fx.node.map_arg(
                    (node.args, node.kwargs), lambda n: n.meta["val"]
                )
                node.meta["val"] = node.target(*args, **kwargs)


def exponents_in_fp64_pass() -> Any:
    """The pass as Inductor's `post_grad_custom_pre_pass` (a `CustomGraphPass`: it has a uuid,
    which Inductor's graph cache asks for; the drafter turns that cache off anyway)."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class ExponentsInFp64(CustomGraphPass):
        rewritten = 0
        """`exp` nodes the last graph had rewritten (a restarted compile counts once)."""

        def __call__(self, graph: Any) -> None:
            self.rewritten = exponents_in_fp64(graph)

        def uuid(self) -> Any:
            return "tools.draft.scan_precision.exponents_in_fp64/1"

    return ExponentsInFp64()
