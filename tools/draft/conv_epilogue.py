"""A convolution's pointwise epilogue fused into its store, chosen on the GPU at draft time
(issue 15).

In a compiler draft a convolution is `bufA = triton_convolution(...)` and Inductor's kernels
after it read and write its output: for level 2's convolutions one pointwise kernel
(`triton_poi_fused_...(in_out_ptr0, ...)`: bias, activations, scaling) that reads `bufA` and
writes the result over it, one more pass over the convolution's output (17-34% of the
candidate's time in session 10's profiles: level2/31 0.72 of 3.28 ms, level2/100 1.62 of 9.73,
level2/23 0.72 of 2.13). torch.compile runs the same pass after cuDNN.

`fuse_conv_epilogues` rewrites such a pair, where the convolution runs this project's split
GEMM (`X_SPLIT=True`, tools/kernels/triton_conv.py `_conv_split_kernel`), into one kernel: a copy of the
split GEMM whose store is the pointwise kernel's body, evaluated on the GEMM's output tile
flattened (`xindex`: the output's element offsets, `xmask`: the tile's bounds; the load of the
convolution's output becomes the accumulator, the store to it the GEMM's store), launched by
`triton_convolution(..., EPILOGUE=(kernel, tuned kernel, args, constexprs))` where the pointwise
launch was. Only the plain case is taken: the pointwise kernel is the next statement to touch
the output, reads it once and writes it once at its own index, with no other program-id or
block-offset arithmetic; anything else is left as it is.

That the pointwise kernel indexes the output with its flat index (Inductor's iteration order of
a dense buffer) is what the fused copy assumes, so `pick_conv_epilogues` runs the draft both
ways on the problem's inputs, takes the fused one only where every output matches the unfused
one (`MATCH_RTOL`) and its forward is at least `MIN_GAIN` faster, and says why in a note. The
draft is verified afterwards like any candidate.
"""

from __future__ import annotations

import ast
import re
import tempfile
from typing import Any

from tools.checks.timing import Timer
from tools.core import pyast
from tools.draft.launch_configs import Run, RunTimer, load_module
from tools.draft.loading import draft_model

MIN_GAIN = 0.03
ROUNDS = 3
MATCH_RTOL = 1e-5
"""Largest difference allowed between the fused and the unfused draft's outputs, relative to
1 + |unfused|: the same products and the same epilogue, only the tile (and so the order of the
accumulation) may differ."""

SPLIT_KERNEL = "_conv_split_kernel"
BEGIN = "# --- epilogue begin"
END = "# --- epilogue end ---"
SKIPPED_NAMES = ("xoffset", "xindex", "xmask")


class NotFusable(Exception):
    """Why one convolution's epilogue is left as it is."""


def fuse_conv_epilogues(source: str) -> tuple[str, list[str]]:
    """`source` with each fusable convolution + pointwise pair fused (module docstring), and a
    note per convolution with X_SPLIT that was looked at."""
    tree = pyast.parse(source)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    call_fn, split = funcs.get("call"), funcs.get(SPLIT_KERNEL)
    if call_fn is None or split is None:
        return source, []
    split_text = _segment(source, split)
    if BEGIN not in split_text or END not in split_text:
        return source, []
    body = list(call_fn.body)
    kernels_added: list[str] = []
    notes: list[str] = []
    # One fused kernel per pointwise kernel, however many convolutions it follows: its text
    # depends on the pointwise kernel only (the launch's values are arguments), and a deep
    # network launches the same Inductor kernel after every layer (a copy per site was a
    # compile and an autotuning per layer on the GPU: issue 33).
    fused_names: dict[str, str] = {}
    i = 0
    while i < len(body):
        stmt = body[i]
        if not _is_split_conv(stmt):
            i += 1
            continue
        target = stmt.targets[0].id  # type: ignore[attr-defined]
        try:
            body, kernel_text, launched = _fuse_one(
                source, funcs, body, i, split_text, len(kernels_added), fused_names
            )
        except NotFusable as why:
            notes.append(f"{target} = triton_convolution(...): epilogue not fused ({why})")
            i += 1
            continue
        if kernel_text:
            kernels_added.append(kernel_text)
        notes.append(
            f"{target} = triton_convolution(...): {launched} fused into its store"
            + ("" if kernel_text else f" ({fused_names[launched]}, as at an earlier one)")
        )
        # body[i] is now the statement after the convolution (its call moved down)
    if not kernels_added:
        return source, notes
    call_fn.body = body
    lines = source.splitlines(keepends=True)
    start = (call_fn.decorator_list[0].lineno if call_fn.decorator_list else call_fn.lineno) - 1
    new_call = ast.unparse(call_fn) + "\n"
    out = "".join(lines[:start]) + "\n\n".join(kernels_added) + "\n\n\n" + new_call
    out += "".join(lines[call_fn.end_lineno :])
    return out, notes


def _fuse_one(
    source: str,
    funcs: dict,
    body: list,
    i: int,
    split_text: str,
    n: int,
    fused_names: dict[str, str] | None = None,
) -> tuple[list, str, str]:
    """The body with the convolution at `i` and the pointwise kernel after it fused, the fused
    kernel's text ("" where `fused_names` already holds one for that pointwise kernel: it is
    reused) and the pointwise kernel's name. A new fused kernel is `_epi{n}`."""
    fused_names = {} if fused_names is None else fused_names
    conv = body[i]
    a = conv.targets[0].id
    conv_names = {x.id for x in ast.walk(conv.value) if isinstance(x, ast.Name)}
    alias = a
    dropped: set[int] = {i}
    moved_dels: list[ast.stmt] = []
    for j in range(i + 1, len(body)):
        stmt = body[j]
        names = {x.id for x in ast.walk(stmt) if isinstance(x, ast.Name)}
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == alias
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            alias = stmt.targets[0].id
            dropped.add(j)
            continue
        if isinstance(stmt, ast.Delete) and names <= {a, alias} | conv_names:
            if names & {a, alias}:
                if names - {a}:  # `del buf1` of the alias itself: used later, not ours
                    raise NotFusable("its output is deleted before any kernel reads it")
                dropped.add(j)
            else:
                moved_dels.append(stmt)
                dropped.add(j)
            continue
        launch = _launch(stmt)
        if launch is not None and names & {a, alias}:
            kernel_name, call = launch
            if not (call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == alias):
                raise NotFusable(f"{kernel_name} reads the output but not as its first argument")
            kernel = funcs.get(kernel_name)
            if kernel is None or not kernel_name.startswith("triton_poi_"):
                raise NotFusable(f"the next kernel to read it, {kernel_name}, is not pointwise")
            text, extra_args, consts = _fused_kernel(source, kernel, call, split_text, n)
            name = f"{SPLIT_KERNEL}_epi{n}"
            if kernel_name in fused_names:
                text, name = "", fused_names[kernel_name]
            else:
                fused_names[kernel_name] = name
            epilogue = ast.Tuple(
                elts=[
                    ast.Name(name),
                    ast.Name(f"{name}_tuned"),
                    ast.Tuple(elts=extra_args, ctx=ast.Load()),
                    ast.Dict(keys=[ast.Constant(k) for k in consts], values=list(consts.values())),
                ],
                ctx=ast.Load(),
            )
            new_call = ast.Call(
                func=conv.value.func,
                args=conv.value.args,
                keywords=[*conv.value.keywords, ast.keyword(arg="EPILOGUE", value=epilogue)],
            )
            new = ast.Assign(targets=[ast.Name(alias, ctx=ast.Store())], value=new_call)
            ast.fix_missing_locations(new)
            kept = [s for k, s in enumerate(body[:j]) if k not in dropped]
            return kept + [new, *moved_dels] + body[j + 1 :], text, kernel_name
        if names & {a, alias}:
            raise NotFusable("a statement other than one pointwise kernel reads its output first")
    raise NotFusable("no kernel reads its output")


def _fused_kernel(
    source: str, kernel: ast.FunctionDef, call: ast.Call, split_text: str, n: int
) -> tuple[str, list[ast.expr], dict[str, ast.expr]]:
    """The split GEMM's text with `kernel`'s body as its store, the launch's other arguments
    and its constexprs (but XBLOCK)."""
    params = [p.arg for p in kernel.args.args]
    constexpr = {p.arg for p in kernel.args.args if p.annotation is not None}
    if not params or params[0] != "in_out_ptr0" or "XBLOCK" not in constexpr:
        raise NotFusable(f"{kernel.name} does not write its first argument in place")
    runtime = [p for p in params[1:] if p not in constexpr]
    if len(call.args) != len(runtime) + 1:
        raise NotFusable(f"{kernel.name}'s launch passes {len(call.args)} arguments")
    consts: dict[str, ast.expr] = {}
    for kw in call.keywords:
        if kw.arg in ("XBLOCK", "num_warps", "num_stages"):
            continue
        if kw.arg not in constexpr:
            raise NotFusable(f"{kernel.name}'s launch sets {kw.arg}")
        consts[kw.arg] = kw.value
    if set(consts) != constexpr - {"XBLOCK"}:
        raise NotFusable(f"{kernel.name}'s launch does not set all its constexprs")
    lines = _epilogue_lines(source, kernel)
    name = f"{SPLIT_KERNEL}_epi{n}"
    text = split_text.replace(f"def {SPLIT_KERNEL}(", f"def {name}(", 1)
    # the epilogue's run-time parameters after the GEMM's (before its constexprs: the launch
    # passes them by position), its constexprs last
    first_constexpr = re.search(r"^\s+HAS_BIAS: tl.constexpr", text, flags=re.M)
    sig_end = re.search(r"^\):", text, flags=re.M)
    if first_constexpr is None or sig_end is None:
        raise NotFusable("the split GEMM's signature was not found")
    consts_text = "".join(f"    {c}: tl.constexpr,\n" for c in consts)
    text = text[: sig_end.start()] + consts_text + text[sig_end.start() :]
    if runtime:
        runtime_text = "    " + ", ".join(runtime) + ",\n"
        text = text[: first_constexpr.start()] + runtime_text + text[first_constexpr.start() :]
    begin = text.index(BEGIN)
    begin = text.rindex("\n", 0, begin) + 1
    end = text.index("\n", text.index(END)) + 1
    block = [
        "    # the pointwise epilogue (copied from " + kernel.name + "), on the tile flattened",
        "    XBLOCK: tl.constexpr = BLOCK_M * BLOCK_N",
        "    xindex = tl.reshape(y_row[:, None] + y_col[None, :], [XBLOCK])",
        "    xmask = tl.reshape(m_ok[:, None] & n_ok[None, :], [XBLOCK])",
        *lines,
    ]
    text = text[:begin] + "\n".join(block) + "\n" + text[end:]
    tuned = (
        f"{name}_tuned = triton.autotune(\n"
        "    configs=_split_configs(),\n"
        '    key=["M", "CGP", "C_out_g", "KD", "KH", "KW", "sd", "sh", "sw"],\n'
        '    prune_configs_by={"early_config_prune": _prune_split_configs},\n'
        f")({name})\n"
    )
    return text + "\n\n" + tuned, list(call.args[1:]), consts


def _epilogue_lines(source: str, kernel: ast.FunctionDef) -> list[str]:
    """The pointwise kernel's statements as the fused store: the output's load is the
    accumulator, its store the GEMM's."""
    out: list[str] = []
    loads = stores = 0
    for stmt in kernel.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        names = {x.id for x in ast.walk(stmt) if isinstance(x, ast.Name)}
        attrs = {x.attr for x in ast.walk(stmt) if isinstance(x, ast.Attribute)}
        if isinstance(stmt, ast.Assign) and all(
            isinstance(t, ast.Name) and t.id in SKIPPED_NAMES for t in stmt.targets
        ):
            continue  # xoffset, xindex, xmask: the tile's own
        if names & {"xoffset"} or attrs & {"program_id", "num_programs"}:
            raise NotFusable(f"{kernel.name} uses its program id beyond the flat index")
        if isinstance(stmt, (ast.For, ast.While, ast.If, ast.With)):
            raise NotFusable(f"{kernel.name} has control flow")
        if "in_out_ptr0" not in names:
            out.append("    " + ast.get_source_segment(source, stmt))  # type: ignore[operator]
            continue
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and _is_tl_call(value, "load")
            and _reads_at(value.args[0])  # type: ignore[union-attr]
        ):
            loads += 1
            out.append(f"    {stmt.targets[0].id} = tl.reshape(acc, [XBLOCK])")
        elif (
            isinstance(stmt, ast.Expr)
            and _is_tl_call(value, "store")
            and len(value.args) >= 2  # type: ignore[union-attr]
            and _reads_at(value.args[0])  # type: ignore[union-attr]
            and "in_out_ptr0"
            not in {x.id for x in ast.walk(value.args[1]) if isinstance(x, ast.Name)}  # type: ignore[union-attr]
        ):
            stores += 1
            stored = ast.get_source_segment(source, value.args[1])  # type: ignore[union-attr]
            out.append(
                f"    tl.store(y_ptr + xindex, ({stored}).to(y_ptr.dtype.element_ty), mask=xmask)"
            )
        else:
            raise NotFusable(f"{kernel.name} uses its in-place buffer other than load and store")
    if loads != 1 or stores != 1:
        raise NotFusable(f"{kernel.name} loads its in-place buffer {loads}x, stores it {stores}x")
    return out


def _is_tl_call(node: Any, name: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
        and bool(node.args)
    )


def _reads_at(pointer: ast.expr) -> bool:
    """`in_out_ptr0 + (index)` where the index does not mention the pointer again."""
    return (
        isinstance(pointer, ast.BinOp)
        and isinstance(pointer.op, ast.Add)
        and isinstance(pointer.left, ast.Name)
        and pointer.left.id == "in_out_ptr0"
        and "in_out_ptr0" not in {x.id for x in ast.walk(pointer.right) if isinstance(x, ast.Name)}
    )


def _launch(stmt: ast.stmt) -> tuple[str, ast.Call] | None:
    """(kernel name, call) of a `kernel[grid](...)` statement."""
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Subscript)
        and isinstance(stmt.value.func.value, ast.Name)
    ):
        return stmt.value.func.value.id, stmt.value
    return None


def _is_split_conv(stmt: ast.stmt) -> bool:
    """`buf = triton_convolution(..., X_SPLIT=True, precision='bf16x3', ...)` without EPILOGUE."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "triton_convolution"
    ):
        return False
    kw = {k.arg: k.value for k in stmt.value.keywords}
    constant = {k: v.value for k, v in kw.items() if isinstance(v, ast.Constant)}
    return (
        constant.get("X_SPLIT") is True
        and constant.get("precision") == "bf16x3"
        and "EPILOGUE" not in kw
    )


def _segment(source: str, node: ast.FunctionDef) -> str:
    """A function's text, decorators and the indented comment lines after its last statement
    (the split GEMM's end-of-epilogue marker) included."""
    lines = source.splitlines(keepends=True)
    start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
    end = node.end_lineno or start
    while (
        end < len(lines)
        and lines[end].startswith((" ", "\t"))
        and lines[end].strip().startswith("#")
    ):
        end += 1
    return "".join(lines[start:end])


def pick_conv_epilogues(
    source: str,
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    *,
    timer: RunTimer = Timer.fastest_ms,
) -> tuple[str, list[str]]:
    """The fused draft (`fuse_conv_epilogues`) where its outputs match the draft's and its
    forward is at least `MIN_GAIN` faster on the problem's inputs; otherwise `source`."""
    import torch

    fused, notes = fuse_conv_epilogues(source)
    if fused == source:
        return source, notes
    outs, models = [], []
    with tempfile.TemporaryDirectory(prefix="conv_epilogue_") as workdir:
        for k, text in enumerate((source, fused)):
            module = load_module(text, workdir, f"draft_epilogue_{k}", share=True)
            model = draft_model(module, init_inputs, device)
            with torch.no_grad():
                out = model(*inputs)
            outs.append(out if isinstance(out, (tuple, list)) else (out,))
            models.append(model)
        worst = 0.0
        for a, b in zip(outs[0], outs[1], strict=True):
            if a.shape != b.shape:
                return source, notes + ["epilogue fusion refused: an output's shape differs"]
            diff = ((a.double() - b.double()).abs() / (1 + a.double().abs())).max()
            worst = max(worst, float(diff))
        if not worst <= MATCH_RTOL:
            return source, notes + [
                f"epilogue fusion refused: outputs differ by {worst:.2e} (relative) from the "
                f"unfused draft's, more than {MATCH_RTOL:g}"
            ]
        times: list[float] = [float("inf"), float("inf")]
        for _ in range(ROUNDS):
            for k, model in enumerate(models):

                def run(model: Any = model) -> Any:
                    with torch.no_grad():
                        return model(*inputs)

                label = "fused" if k else "unfused"
                times[k] = min(times[k], timer(Run(run, f"forward, {label}", {"fused": bool(k)})))
    said = f"forward {times[1]:.3f} ms fused against {times[0]:.3f} ms unfused, outputs within {worst:.1e}"
    if times[1] <= times[0] * (1 - MIN_GAIN):
        return fused, notes + [f"epilogue fusion taken on the GPU at draft time: {said}"]
    return source, notes + [f"epilogue fusion not taken (under {MIN_GAIN:.0%} faster): {said}"]
