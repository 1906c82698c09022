"""A draft with two paths: Inductor's kernels for the problem's own sizes first, its
dynamic-shape kernels for every other size (issue 15).

A dynamic-shape draft reads sizes from its inputs, so it is a drop-in `ModelNew`; but Inductor
writes different kernels for symbolic sizes: looped reductions where the row would fit one block,
a split reduction's factor chosen without the length, index arithmetic with run-time divisors,
no divisibility specialisation of the sizes it passes (`do_not_specialize`). On the H200 the
dynamic drafts of level1/35 (GroupNorm), 41 (max pool 1D), 90-93 (cumsum, cumprod) and 98
(KLDivLoss) ran at 0.39x-0.78x of torch.compile, which compiles for the sizes it sees (session
10, `benchmarks/results/gpu/2026-12-01-s10/merged/report_level1.md`).

torch.compile specialises and guards: it runs code compiled for the sizes it saw while they
hold, and compiles again when they change. `with_sized_path` does the same within one file: the
dynamic draft's `forward` first compares the call's sizes with the ones the static draft was
made for (`_sized_call`: every tensor argument's shape, strides and dtype, every parameter's and
buffer's, and the plain-value attributes of every submodule: `self.dim`, `eps`, kernel sizes),
and runs the static draft's kernels (`_forward_sized`, `call_sized`) where all of them match,
the dynamic ones otherwise. The draft job times both drafts on the problem's inputs and takes the
two-path draft only where the static one is faster (`pick_sized_path`); the candidate is then
verified and timed like any other, at the problem's sizes, and `--generalize` checks the dynamic
path at others.
"""

from __future__ import annotations

import ast
import re
import tempfile
import textwrap
from typing import Any

from tools.checks.timing import Timer
from tools.core import pyast
from tools.draft.launch_configs import MIN_GAIN, ROUNDS, Run, RunTimer, load_module
from tools.draft.loading import draft_model

SUFFIX = "_sized"
MATCH_RTOL = 1e-3
"""How far (relative, over 1 + |value|) the static draft's outputs may be from the dynamic
draft's at draft time: a sanity check only (the candidate is verified afterwards); two
reduction orders of one fp32 graph differ in the last bits."""

SIGNATURE_SOURCE = '''
def _call_signature(model, args):
    """What the sized path was drafted for: each argument's shape, strides and dtype (or plain
    value), each parameter's and buffer's, and the plain-value attributes of each submodule."""
    def plain(v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return True
        return isinstance(v, tuple) and all(plain(x) for x in v)

    def tensor(t):
        return (tuple(t.shape), tuple(t.stride()), str(t.dtype))

    sig = []
    for a in args:
        sig.append(tensor(a) if isinstance(a, torch.Tensor) else (a if plain(a) else type(a).__name__))
    for name, m in model.named_modules():
        for k, v in m._parameters.items():
            sig.append((name, k, None if v is None else tensor(v)))
        for k, v in m._buffers.items():
            sig.append((name, k, None if v is None else tensor(v)))
        for k, v in vars(m).items():
            if not k.startswith("_") and k != "training" and plain(v):
                sig.append((name, k, v))
    return sig


def _sized_call(model, args):
    return _SIZED is not None and _call_signature(model, args) == _SIZED
'''


class NotCombinable(Exception):
    """The two drafts do not have the shape `with_sized_path` expects."""


def _top_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _model_new(tree: ast.Module) -> ast.ClassDef:
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == "ModelNew":
            return n
    raise NotCombinable("no ModelNew class")


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    for n in cls.body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            return n
    raise NotCombinable(f"ModelNew has no {name}")


def _segment(source: str, node: ast.AST) -> str:
    lines = source.splitlines(keepends=True)
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[start - 1 : node.end_lineno])


def _assigned(tree: ast.Module) -> set[str]:
    return {
        t.id
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    }


def copy_conv_keywords(picked: str, target: str) -> str:
    """`target` with each `triton_convolution` call's keywords (the draft-time picks: precision,
    X_SPLIT, a tile) as the same call of `picked` has them: a static draft of the problem gets
    the dynamic draft's convolution choices without timing them again. Raises NotCombinable
    where the calls differ in number, or a pick is not a plain value (a fused epilogue).
    Written in one pass over `target` (`conv_picks.with_keywords`): parsing the draft again for
    each call was quadratic in a network's convolutions (5.2 CPU s at 104 calls, 23 s at 208)."""
    from tools.compile.tune import CONV_TILE_KEYS, conv_sites
    from tools.draft.conv_picks import with_keywords

    knobs = {"precision", "X_SPLIT", "X_LAST", "SPLIT_W", "PACK_W", *CONV_TILE_KEYS}
    src, sites = conv_sites(picked), conv_sites(target)
    if sorted(src) != sorted(sites):
        raise NotCombinable("the two drafts have different convolution calls")
    values: dict[int, dict[str, Any]] = {}
    for site, call in sorted(src.items()):
        for k in call.keywords:
            if k.arg == "EPILOGUE":
                raise NotCombinable(f"conv#{site} has a fused epilogue")
            if k.arg in knobs and isinstance(k.value, ast.Constant):
                values.setdefault(site, {})[k.arg] = k.value.value
    return with_keywords(target, sites, values)


def _rename(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], text)


def with_sized_path(dynamic: str, static: str) -> str:
    """One file from two drafts of a problem: `static`'s kernels, host code (`call_sized`) and
    forward (`ModelNew._forward_sized`) taken where the call has the sizes `_SIZED` names,
    `dynamic`'s otherwise. `_SIZED` is left None (the sized path never runs) for
    `record_sizes` to fill in. Raises NotCombinable for drafts without the expected layout."""
    dtree, stree = pyast.parse(dynamic), pyast.parse(static)
    dfuncs, sfuncs = _top_functions(dtree), _top_functions(stree)
    if "call" not in dfuncs or "call" not in sfuncs:
        raise NotCombinable("a draft has no call()")
    dcls, scls = _model_new(dtree), _model_new(stree)
    dforward, sforward = _method(dcls, "forward"), _method(scls, "forward")
    if ast.dump(dforward.args) != ast.dump(sforward.args):
        raise NotCombinable("the two forwards take different arguments")
    if dforward.args.kwonlyargs or dforward.args.kwarg:
        raise NotCombinable("forward takes keyword-only arguments")
    renames, added, new_imports = _static_additions(dynamic, static, dtree, stree)
    sized_funcs = "\n\n\n".join(_rename(_segment(static, n), renames).rstrip() for n in added)
    sized_forward = _rename(_segment(static, sforward), renames)
    sized_forward = sized_forward.replace("def forward(", "def _forward_sized(", 1)
    text = _put_together(dynamic, dcls, dforward, sized_funcs, sized_forward)
    if new_imports:
        text = _after_imports(text, new_imports)
    pyast.parse(text)  # what was put together must at least be Python
    return text


def _static_additions(
    dynamic: str, static: str, dtree: ast.Module, stree: ast.Module
) -> tuple[dict[str, str], list[ast.FunctionDef], list[str]]:
    """What the static draft adds: its functions (the same text as the dynamic draft's is kept
    once; a name the dynamic draft also defines otherwise gets the suffix (kernels, call), a
    new one is kept as is) and its imports the dynamic draft lacks. Returns (renames, the
    functions to add, the imports to add); NotCombinable where module-level objects differ."""
    dfuncs, sfuncs = _top_functions(dtree), _top_functions(stree)
    renames: dict[str, str] = {}
    added: list[ast.FunctionDef] = []
    for name, node in sfuncs.items():
        if name in dfuncs:
            if _segment(static, node) == _segment(dynamic, dfuncs[name]):
                continue
            renames[name] = name + SUFFIX
            if name + SUFFIX in dfuncs or name + SUFFIX in sfuncs:
                raise NotCombinable(f"{name + SUFFIX} is taken")
        added.append(node)
    if "call" not in renames:
        raise NotCombinable("the static draft's call() is the dynamic one's")
    dnames = _assigned(dtree)
    extra = sorted(_assigned(stree) - dnames)
    if extra:  # module-level objects only the static draft has (an autotuned copy, say)
        raise NotCombinable(f"the static draft defines {', '.join(extra)} at module level")
    imports = [
        ast.get_source_segment(static, n)
        for n in stree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
    ]
    known = {
        ast.get_source_segment(dynamic, n)
        for n in dtree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }
    return renames, added, [i for i in imports if i and i not in known]


def _put_together(
    dynamic: str,
    dcls: ast.ClassDef,
    dforward: ast.FunctionDef,
    sized_funcs: str,
    sized_forward: str,
) -> str:
    """The dynamic draft with the sized functions and `_SIZED` before `ModelNew`, a guard at
    the top of its forward (after a docstring) that takes `_forward_sized` for the sizes the
    sized path was drafted for, and `_forward_sized` after forward."""
    args = dforward.args
    names = [a.arg for a in args.posonlyargs + args.args][1:]  # without self
    passed = names + ([f"*{args.vararg.arg}"] if args.vararg else [])
    packed = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    if args.vararg:
        packed = f"{packed} + tuple({args.vararg.arg})" if names else f"tuple({args.vararg.arg})"
    body_indent = " " * dforward.body[0].col_offset
    guard = (
        f"{body_indent}if _sized_call(self, {packed}):  # the sizes the sized path was drafted for\n"
        f"{body_indent}    return self._forward_sized({', '.join(passed)})\n"
    )

    lines = dynamic.splitlines(keepends=True)
    first_body = dforward.body[0]
    if (
        isinstance(first_body, ast.Expr)
        and isinstance(first_body.value, ast.Constant)
        and isinstance(first_body.value.value, str)
        and len(dforward.body) > 1
    ):
        first_body = dforward.body[1]  # after the docstring
    insert_at = first_body.lineno - 1
    forward_end = dforward.end_lineno
    class_at = min([dcls.lineno] + [d.lineno for d in dcls.decorator_list]) - 1
    out = (
        lines[:class_at]
        + [
            "# The problem's own sizes: Inductor's kernels for exactly these sizes\n"
            "# (tools/draft/sized.py); ModelNew.forward takes them where the call matches _SIZED.\n",
            sized_funcs + "\n\n\n",
            SIGNATURE_SOURCE.lstrip("\n") + "\n\n",
            "_SIZED = None\n\n\n",
        ]
        + lines[class_at:insert_at]
        + [guard]
        + lines[insert_at:forward_end]
        + ["\n", textwrap.indent(textwrap.dedent(sized_forward), " " * dforward.col_offset)]
        + lines[forward_end:]
    )
    return "".join(out)


def _after_imports(text: str, imports: list[str]) -> str:
    tree = pyast.parse(text)
    last = max(n.end_lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    lines = text.splitlines(keepends=True)
    return "".join(lines[:last] + [i + "\n" for i in imports] + lines[last:])


def record_sizes(text: str, signature: list) -> str:
    """`text` with `_SIZED` set to `signature` (plain values only: a literal)."""
    literal = repr(signature)
    ast.literal_eval(literal)  # shapes, strides, dtypes and numbers only
    if "\n_SIZED = None\n" not in text:
        raise NotCombinable("no _SIZED placeholder")
    return text.replace("\n_SIZED = None\n", f"\n_SIZED = {literal}\n", 1)


def pick_sized_path(
    dynamic: str,
    static: str,
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    *,
    timer: RunTimer = Timer.fastest_ms,
) -> tuple[str, list[str]]:
    """The two-path draft where the static draft's forward is at least `MIN_GAIN` faster than
    the dynamic one's on the problem's inputs and their outputs agree; else `dynamic`."""
    import torch

    try:
        combined = with_sized_path(dynamic, static)
    except NotCombinable as exc:
        return dynamic, [f"sized path not built: {exc}"]
    with tempfile.TemporaryDirectory(prefix="draft_sized_") as workdir:
        module = load_module(combined, workdir, "draft_sized_probe", share=True)
        model = draft_model(module, init_inputs, device)
        combined = record_sizes(combined, module._call_signature(model, tuple(inputs)))
        module = load_module(combined, workdir, "draft_sized", share=True)
        model = draft_model(module, init_inputs, device)
        if not module._sized_call(model, tuple(inputs)):
            return dynamic, ["sized path not taken: the problem's call does not match its sizes"]
        sized = module._SIZED

        def dynamic_forward(*args: Any) -> Any:
            module._SIZED = None  # the guard fails: the dynamic kernels run
            try:
                return model(*args)
            finally:
                module._SIZED = sized

        # the sized path as the candidate will run it: through the guard
        forwards = {"dynamic": dynamic_forward, "sized": model}
        outs = {}
        with torch.no_grad():
            for k, f in forwards.items():
                out = f(*inputs)
                outs[k] = out if isinstance(out, (tuple, list)) else (out,)
        worst = 0.0
        for a, b in zip(outs["dynamic"], outs["sized"], strict=True):
            if not isinstance(a, torch.Tensor) or a.shape != b.shape:
                return dynamic, ["sized path not taken: an output differs in shape"]
            diff = ((a.double() - b.double()).abs() / (1 + a.double().abs())).max()
            worst = max(worst, float(diff) if a.numel() else 0.0)
        if not worst <= MATCH_RTOL:
            return dynamic, [
                f"sized path not taken: its outputs differ by {worst:.2e} (relative) from the "
                f"dynamic draft's, more than {MATCH_RTOL:g}"
            ]
        times = {k: float("inf") for k in forwards}
        for _ in range(ROUNDS):
            for k, f in forwards.items():

                def run(f: Any = f) -> Any:
                    with torch.no_grad():
                        return f(*inputs)

                times[k] = min(times[k], timer(Run(run, f"forward, {k}", {"sized": k == "sized"})))
    said = (
        f"forward {times['sized']:.3f} ms with the kernels for the problem's sizes against "
        f"{times['dynamic']:.3f} ms dynamic"
    )
    if times["sized"] <= times["dynamic"] * (1 - MIN_GAIN):
        return combined, [
            f"sized path taken on the GPU at draft time: {said}; at other sizes the dynamic "
            "kernels run (tools/draft/sized.py)"
        ]
    return dynamic, [f"sized path not taken (under {MIN_GAIN:.0%} faster): {said}"]
