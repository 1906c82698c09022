"""The arithmetic of a candidate's `@triton.jit` kernels, read from its source
(`tools.checks.arithmetic` says how and why): `scan_kernel` collects a kernel's dots, casts, masks
and residuals, following expressions to the constants they can take with `SourceModel`
(`tools.checks.source_model`). It reads the candidate's text, never runs it: in the verifier's
(the agent's) process."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

from tools.checks.arithmetic_kinds import (
    ARITHMETICS,
    NARROW,
    SPLITS,
    Findings,
    asm_kind,
    dot_labels,
    dtype_name,
    mask_kind,
)
from tools.checks.source_model import (
    DEPTH,
    SourceModel,
    called_name,
    dotted_name,
    param_defaults,
    positional_params,
    union_of,
)

_KERNEL_DTYPE_CALLS = ("zeros", "full", "zeros_like", "full_like")


def scan_kernel(model: SourceModel, name: str, env: Mapping[str, frozenset | None]) -> Findings:
    """The arithmetic of jit function `name` and the jit functions it calls, its parameters
    bound to `env` (missing ones: every value their call sites give). A kernel with no dot,
    cast or mask computes in fp32."""
    found = _scan(model, model.functions[name], dict(env), set())
    if not found.labels:
        found.labels.add("fp32")
    return found


def _scan(model: SourceModel, fn: ast.FunctionDef, env: dict, stack: set) -> Findings:
    out = Findings()
    key = (fn.name, repr(sorted(env.items(), key=lambda kv: kv[0])))
    if key in stack or len(stack) > DEPTH:
        return out
    stack = stack | {key}
    rounded = _rounded_names(model, fn, env)
    for node in _reachable(model, fn, env, fn.body):
        if isinstance(node, ast.Call):
            _scan_call(model, fn, env, rounded, node, out, stack)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
            kind = _mask_of(model, fn, node)
            if kind:
                out.labels.add(kind)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            kind = _rounding(model, fn, env, rounded, node.right)
            if kind in SPLITS:
                out.splits.add(kind)
    return out


def _scan_call(model, fn, env, rounded, call: ast.Call, out: Findings, stack: set) -> None:
    name = model.callee(call.func)
    if name == "?":  # a callable the code computes: it can be anything
        out.labels.add("unknown")
    elif name == "dot" and len(call.args) >= 2:
        out.labels |= _dot_site(model, fn, env, rounded, call)
    elif name == "dot_scaled":
        out.labels.add("fp8")
    elif name == "inline_asm_elementwise":
        out.labels.add(_asm_kind(model, fn, env, call))
    elif name in ("to", "cast"):
        kind = _cast_kind(model, fn, env, call)
        if kind in NARROW or kind in ("fp64", "unknown"):
            out.labels.add(kind)
    elif name in _KERNEL_DTYPE_CALLS:
        for kw in call.keywords:
            if kw.arg == "dtype":
                kinds = {dtype_name(v) for v in model.values(kw.value, fn, env) or ()}
                out.labels |= kinds & {*NARROW, "fp64"}
    elif name in model.jit and name in model.functions:
        callee = model.functions[name]
        out.update(_scan(model, callee, _bind(model, fn, env, callee, call), stack))


def _bind(model, fn, env, callee: ast.FunctionDef, call: ast.Call) -> dict:
    """A jit helper's parameters as this call gives them (its defaults for the rest)."""
    bound: dict[str, frozenset | None] = {}
    positional = positional_params(callee)
    for param, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        bound[param] = model.values(arg, fn, env)
    for kw in call.keywords:
        if kw.arg is not None:
            bound[kw.arg] = model.values(kw.value, fn, env)
    for param, default in param_defaults(callee).items():
        bound.setdefault(param, model.values(default, None, None))
    return bound


def _dot_site(model, fn, env, rounded, call: ast.Call) -> set[str]:
    """`tl.dot(a, b, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype)`."""
    kinds = {_rounding(model, fn, env, rounded, a) for a in call.args[:2]} - {None}
    args = dict(
        zip(
            ("input", "other", "acc", "input_precision", "allow_tf32", "mnia", "out_dtype"),
            call.args,
        )
    )
    args.update({k.arg: k.value for k in call.keywords if k.arg})
    labels: set[str] = set()
    for kind in kinds or {None}:
        if "input_precision" in args and not _is_none(args["input_precision"]):
            precisions = model.values(args["input_precision"], fn, env)
        elif "allow_tf32" in args and not _is_none(args["allow_tf32"]):
            allow = model.values(args["allow_tf32"], fn, env)
            precisions = None if allow is None else frozenset(None if v else "ieee" for v in allow)
        else:
            precisions = model.default_precision
        if precisions is not None and None in precisions and model.default_precision != {None}:
            precisions = union_of([precisions - {None}, model.default_precision])
        labels |= dot_labels(kind, precisions)
    if "out_dtype" in args:
        labels |= {dtype_name(v) for v in model.values(args["out_dtype"], fn, env) or ()} & set(
            NARROW
        )
    return labels


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _cast_kind(model, fn, env, call: ast.Call) -> str | None:
    """The dtype a `.to(dtype)` / `tl.cast(x, dtype)` converts to, when it rounds (a bitcast
    reinterprets bits: None); `unknown` for a dtype the code computes."""
    if any(
        k.arg == "bitcast" and model.truth(k.value, fn, env) is not False for k in call.keywords
    ):
        return None
    method = (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "to"
        and dotted_name(call.func.value) not in ("tl", "triton.language")
    )
    given = call.args[0] if method and call.args else call.args[1] if len(call.args) > 1 else None
    given = next((k.value for k in call.keywords if k.arg == "dtype"), given)
    if given is None:
        return None
    found = model.values(given, fn, env)
    if found is None:  # a dtype the code computes: unknown, unless it is the data's own
        return None if ast.unparse(given).endswith((".dtype", ".element_ty")) else "unknown"
    kinds = {dtype_name(v) for v in found}
    narrow = [k for k in ARITHMETICS if k in kinds and k in (*NARROW, "fp64")]
    return narrow[0] if narrow else None


def _asm_kind(model, fn, env, call: ast.Call) -> str:
    """What `tl.inline_asm_elementwise(asm, ...)` rounds to (`asm_kind`); `unknown` for other
    assembly (it can compute in anything) or assembly the code builds."""
    asm = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg == "asm"), None)
    )
    texts = model.values(asm, fn, env) if asm is not None else None
    kinds = {asm_kind(str(t)) for t in texts or ()} or {"unknown"}
    return "unknown" if texts is None or len(kinds) > 1 else kinds.pop()


def _mask_of(model: SourceModel, fn: ast.FunctionDef, node: ast.BinOp) -> str | None:
    """The rounding a `bits & mask` makes: a mask clearing low bits of an fp32's bits (the other
    operand comes from a bitcast; an index aligned with `& -16` is no rounding)."""
    for side, other in ((node.left, node.right), (node.right, node.left)):
        value = side
        negative = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
        if negative:
            value = value.operand
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            kind = mask_kind(-value.value if negative else value.value)
            if kind and _float_bits(model, fn, other):
                return kind
    return None


def _float_bits(model: SourceModel, fn: ast.FunctionDef, expr: ast.expr) -> bool:
    """Whether `expr` is computed from a bitcast (directly or through a local name)."""
    local = model.local_assigns(fn)
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and any(k.arg == "bitcast" for k in node.keywords):
            return True
        if isinstance(node, ast.Name):
            for value in local.get(node.id, []):
                if any(
                    isinstance(n, ast.Call) and any(k.arg == "bitcast" for k in n.keywords)
                    for n in ast.walk(value)
                ):
                    return True
    return False


def _rounding(model, fn, env, rounded: dict, expr: ast.expr) -> str | None:
    """The rounding `expr`'s value went through: a narrowing cast, a mantissa mask, a jit
    helper that returns one (through bitcasts and casts back to fp32)."""
    if isinstance(expr, ast.Name):
        return rounded.get(expr.id)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitAnd):
        return _mask_of(model, fn, expr)
    if not isinstance(expr, ast.Call):
        return None
    name = called_name(expr.func)
    if name == "inline_asm_elementwise":
        kind = _asm_kind(model, fn, env, expr)
        return kind if kind != "unknown" else None
    if name in ("to", "cast"):
        kind = _cast_kind(model, fn, env, expr)
        if kind in NARROW:
            return kind
        inner = (
            expr.func.value
            if name == "to" and isinstance(expr.func, ast.Attribute)
            else (expr.args[0] if expr.args else None)
        )
        return _rounding(model, fn, env, rounded, inner) if inner is not None else None
    if name in model.jit and isinstance(expr.func, ast.Name):
        return _helper_rounds(model, name)
    return None


def _helper_rounds(model: SourceModel, name: str) -> str | None:
    """The rounding a jit helper's return value went through (`_bf16_round(v)`)."""
    if name not in model.helper_rounding:
        model.helper_rounding[name] = None  # recursion guard
        fn = model.functions[name]
        rounded = _rounded_names(model, fn, {})
        kinds = [
            _rounding(model, fn, {}, rounded, r.value)
            for r in ast.walk(fn)
            if isinstance(r, ast.Return) and r.value is not None
        ]
        model.helper_rounding[name] = next((k for k in kinds if k), None)
    return model.helper_rounding[name]


def _rounded_names(model, fn: ast.FunctionDef, env) -> dict[str, str]:
    """Local names bound to a rounded value, in the order they are assigned."""
    rounded: dict[str, str] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            kind = _rounding(model, fn, env, rounded, node.value)
            for target in node.targets:
                if isinstance(target, ast.Name) and kind:
                    rounded[target.id] = kind
    return rounded


def _reachable(model, fn, env, body: list[ast.stmt]) -> Iterable[ast.AST]:
    """Every node of `body` that can run: `if` branches on values known from `env` (a
    constexpr) are pruned."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from ast.walk(stmt.test)
            truth = model.truth(stmt.test, fn, env)
            if truth is not False:
                yield from _reachable(model, fn, env, stmt.body)
            if truth is not True:
                yield from _reachable(model, fn, env, stmt.orelse)
        elif isinstance(stmt, ast.For | ast.While | ast.With | ast.Try):
            for field in ("target", "iter", "test"):
                if getattr(stmt, field, None) is not None:
                    yield from ast.walk(getattr(stmt, field))
            for item in getattr(stmt, "items", []):
                yield from ast.walk(item)
            for field in ("body", "orelse", "finalbody"):
                yield from _reachable(model, fn, env, getattr(stmt, field, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _reachable(model, fn, env, handler.body)
        elif not isinstance(stmt, ast.FunctionDef):
            yield from ast.walk(stmt)
