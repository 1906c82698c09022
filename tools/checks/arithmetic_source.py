"""The arithmetic of a candidate's `@triton.jit` kernels, read from its source
(`tools.checks.arithmetic` says how and why): `SourceModel` follows expressions to the constants they
can take, `scan_kernel` collects a kernel's dots, casts, masks and residuals."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

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
from tools.core.pyast import parse

_TOP = ast.Constant(value=...)  # an assignment whose value cannot be followed
_DEPTH = 12
_KERNEL_DTYPE_CALLS = ("zeros", "full", "zeros_like", "full_like")


def _base(func: ast.expr) -> str | None:
    """The called name: `f(...)`, `f[grid](...)`, `obj.f(...)`, `tl.f(...)`."""
    if isinstance(func, ast.Subscript):
        func = func.value
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _union(sets: Iterable[frozenset | None]) -> frozenset | None:
    out: set = set()
    for s in sets:
        if s is None:
            return None
        out |= s
    return frozenset(out)


def _is_jit(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if _dotted(target).rsplit(".", 1)[-1] == "jit":
            return True
    return False


class SourceModel:
    """A candidate file as far as its arithmetic goes: its functions, which are `@triton.jit`,
    module-level assignments, every call site by callee name, and each function's local
    assignments; `values` follows an expression to the constants it can take."""

    def __init__(self, source: str):
        tree = parse(source)
        self.functions: dict[str, ast.FunctionDef] = {}
        self.assigns: dict[str, list[ast.expr]] = {}
        self.calls: dict[str, list[tuple[ast.Call, ast.FunctionDef | None]]] = {}
        self._locals: dict[int, dict[str, list[ast.expr]]] = {}
        self.helper_rounding: dict[str, str | None] = {}
        """jit helper -> the rounding its return value went through (`_helper_rounds`)."""
        self._busy: set[tuple[int, str]] = set()
        self.imported: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef):
                        self.functions.setdefault(sub.name, sub)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                for name, value in _bindings(node):
                    self.assigns.setdefault(name, []).append(value)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = alias.name
        self.jit = {name for name, fn in self.functions.items() if _is_jit(fn)}
        self._collect_calls(tree)
        sets_default = "TRITON_F32_DEFAULT" in source or "fp32_default" in source
        self.default_precision = (
            self._default_precision(tree) if sets_default else frozenset({None})
        )

    def callee(self, func: ast.expr) -> str | None:
        """The function a call reaches, by name: `tl.dot(...)` and `k[grid](...)` by their own,
        a module-level alias (`mm = tl.dot`, `from triton.language import dot as mm`) by what it
        names; `?` for an alias the code computes (`mm = getattr(tl, name)`)."""
        name = _base(func)
        target = func.value if isinstance(func, ast.Subscript) else func
        for _ in range(_DEPTH):
            if not isinstance(target, ast.Name) or name in self.functions:
                return name
            if name in self.imported:
                return self.imported[name]
            bound = self.assigns.get(name)
            if not bound:
                return name
            if len(bound) > 1 or not isinstance(bound[0], ast.Name | ast.Attribute):
                return "?"
            target, name = bound[0], _base(bound[0])
        return "?"

    def _collect_calls(self, tree: ast.Module) -> None:
        def visit(node: ast.AST, scope: ast.FunctionDef | None) -> None:
            for child in ast.iter_child_nodes(node):
                inner = child if isinstance(child, ast.FunctionDef) else scope
                if isinstance(child, ast.Call) and (name := _base(child.func)):
                    self.calls.setdefault(name, []).append((child, scope))
                visit(child, inner)

        visit(tree, None)

    def _default_precision(self, tree: ast.Module) -> frozenset | None:
        """What a `tl.dot` without a precision uses: TF32, unless the file sets Triton's
        `TRITON_F32_DEFAULT` (or `knobs.language.fp32_default`) to a value it spells out."""
        values: list[frozenset | None] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    text = ast.unparse(target)
                    if "TRITON_F32_DEFAULT" in text or "fp32_default" in text:
                        values.append(self.values(node.value, None, None))
            elif isinstance(node, ast.Call) and _base(node.func) in ("setdefault", "putenv"):
                args = node.args
                if len(args) == 2 and ast.unparse(args[0]).strip("'\"") == "TRITON_F32_DEFAULT":
                    values.append(self.values(args[1], None, None))
        if not values:
            return frozenset({None})
        found = _union(values)
        return None if found is None else found | {None}

    # -- values -----------------------------------------------------------------------------
    def values(
        self, expr: ast.expr, scope: ast.FunctionDef | None, env: Mapping | None, depth: int = 0
    ) -> frozenset | None:
        """The constants `expr` can evaluate to (None: not known). `env`: values of `scope`'s
        parameters (a kernel's recorded constexprs, a helper's arguments)."""
        if depth > _DEPTH or expr is _TOP:
            return None
        d = depth + 1
        if isinstance(expr, ast.Constant):
            return frozenset({expr.value}) if _hashable(expr.value) else None
        if isinstance(expr, ast.Name):
            return self._name_values(expr.id, scope, env, d)
        if isinstance(expr, ast.IfExp):
            truth = self.truth(expr.test, scope, env, d)
            parts = (
                [expr.body]
                if truth is True
                else [expr.orelse]
                if truth is False
                else [expr.body, expr.orelse]
            )
            return _union(self.values(p, scope, env, d) for p in parts)
        if isinstance(expr, ast.BoolOp):
            return self._boolop_values(expr, scope, env, d)
        if isinstance(expr, ast.Attribute):
            is_dtype = dtype_name(expr.attr) or re.fullmatch(r"u?int\d+", expr.attr)
            return (
                frozenset({f"dtype:{expr.attr}"})
                if is_dtype and _dotted(expr) != expr.attr
                else None
            )
        if isinstance(expr, ast.Call):
            name = _base(expr.func)
            if name == "constexpr" and expr.args:
                return self.values(expr.args[0], scope, env, d)
            if name in ("lower", "upper") and isinstance(expr.func, ast.Attribute):
                inner = self.values(expr.func.value, scope, env, d)
                if inner is not None and all(isinstance(v, str) for v in inner):
                    return frozenset(getattr(v, name)() for v in inner)
            return None
        if isinstance(expr, ast.Subscript):
            return self._subscript_values(expr, scope, env, d)
        return None

    def _name_values(self, name: str, scope, env, depth: int) -> frozenset | None:
        if scope is not None:
            found: list[frozenset | None] = []
            if env is not None and name in env:
                found.append(env[name])
            elif name in _params(scope):
                key = (id(scope), name)
                if key in self._busy:  # a recursive call passes it on: adds nothing new
                    return frozenset()
                self._busy.add(key)
                try:
                    found.append(self._param_values(scope, name, depth))
                finally:
                    self._busy.discard(key)
            found += [
                self.values(v, scope, env, depth) for v in self.local_assigns(scope).get(name, [])
            ]
            if found:
                return _union(found)
        if name in self.assigns:
            return _union(self.values(v, None, None, depth) for v in self.assigns[name])
        return None

    def _param_values(self, fn: ast.FunctionDef, name: str, depth: int) -> frozenset | None:
        """Every value parameter `name` of `fn` gets: its default and each call site's argument
        (a launch `fn[grid](...)` included). Not known where a call passes `*args` / `**kw`
        that may hold it, or where there is no call and no default."""
        default = _defaults(fn).get(name)
        found: list[frozenset | None] = []
        position = _positional(fn).index(name) if name in _positional(fn) else None
        for call, caller in self.calls.get(fn.name, []):
            given = next((k.value for k in call.keywords if k.arg == name), None)
            if given is None and position is not None:
                if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
                    return None
                if position < len(call.args):
                    given = call.args[position]
            if given is None:
                if any(k.arg is None for k in call.keywords):
                    return None
                given = default
            found.append(self.values(given, caller, None, depth) if given is not None else None)
        if not found:
            found.append(self.values(default, None, None, depth) if default is not None else None)
        return _union(found)

    def _boolop_values(self, expr: ast.BoolOp, scope, env, depth: int) -> frozenset | None:
        out: set = set()
        for i, operand in enumerate(expr.values):
            vals = self.values(operand, scope, env, depth)
            if vals is None:
                return None
            last = i == len(expr.values) - 1
            keep_truthy = isinstance(expr.op, ast.Or)
            out |= vals if last else {v for v in vals if bool(v) == keep_truthy}
            if all(bool(v) == keep_truthy for v in vals):
                break  # the later operands are never reached
        return frozenset(out)

    def _subscript_values(self, expr: ast.Subscript, scope, env, depth) -> frozenset | None:
        if not isinstance(expr.value, ast.Name) or len(self.assigns.get(expr.value.id, [])) != 1:
            return None
        table = self.assigns[expr.value.id][0]
        key = self.values(expr.slice, scope, env, depth)
        if isinstance(table, ast.Tuple | ast.List):
            items = table.elts
            if key is not None and all(
                isinstance(k, int) and -len(items) <= k < len(items) for k in key
            ):
                items = [items[k] for k in key]
            return _union(self.values(v, None, None, depth) for v in items)
        if isinstance(table, ast.Dict):
            pairs = [
                (self.values(k, None, None, depth) if k else None, v)
                for k, v in zip(table.keys, table.values, strict=True)
            ]
            if key is not None:
                pairs = [(k, v) for k, v in pairs if k is None or k & key]
            return _union(self.values(v, None, None, depth) for _, v in pairs)
        return None

    def truth(self, expr: ast.expr, scope, env, depth: int = 0) -> bool | None:
        """Whether `expr` is true on every value it can take (True), on none (False), else None."""
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            inner = self.truth(expr.operand, scope, env, depth + 1)
            return None if inner is None else not inner
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
            left = self.values(expr.left, scope, env, depth + 1)
            right = self.values(expr.comparators[0], scope, env, depth + 1)
            if left is None or right is None:
                return None
            results = {_compare(expr.ops[0], a, b) for a in left for b in right}
            return results.pop() if len(results) == 1 and None not in results else None
        vals = self.values(expr, scope, env, depth + 1)
        if not vals:
            return None
        truths = {bool(v) for v in vals}
        return truths.pop() if len(truths) == 1 else None

    def local_assigns(self, fn: ast.FunctionDef) -> dict[str, list[ast.expr]]:
        """Every value each name of `fn` is bound to (`_TOP` where it cannot be followed)."""
        key = id(fn)
        if key not in self._locals:
            found: dict[str, list[ast.expr]] = {}
            for node in ast.walk(fn):
                for name, value in _bindings(node):
                    found.setdefault(name, []).append(value)
            self._locals[key] = found
        return self._locals[key]


def _bindings(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """(name, value) for each name `node` binds; `_TOP` where the value cannot be followed."""
    if isinstance(node, ast.Assign):
        out = []
        for target in node.targets:
            out += _bind_target(target, node.value)
        return out
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return _bind_target(node.target, node.value)
    if isinstance(node, ast.NamedExpr):
        return [(node.target.id, node.value)]
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, _TOP)]
    if isinstance(node, ast.For | ast.comprehension):
        items = node.iter.elts if isinstance(node.iter, ast.Tuple | ast.List) else None
        names = [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
        if items is not None and isinstance(node.target, ast.Name):
            return [(node.target.id, v) for v in items]
        return [(n, _TOP) for n in names]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(n.id, _TOP) for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)]
    return []


def _bind_target(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]]:
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple | ast.List):
        same = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
        out = []
        for i, elt in enumerate(target.elts):
            out += _bind_target(elt, value.elts[i] if same else _TOP)
        return out
    return []


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [
        x.arg for x in (a.vararg, a.kwarg) if x is not None
    ]


def _positional(fn: ast.FunctionDef) -> list[str]:
    return [x.arg for x in (*fn.args.posonlyargs, *fn.args.args)]


def _defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    positional = _positional(fn)
    out = dict(zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults))
    out.update({k.arg: d for k, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d})
    return out


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool | None:
    try:
        if isinstance(op, ast.Eq):
            return a == b
        if isinstance(op, ast.NotEq):
            return a != b
        if isinstance(op, ast.In):
            return a in b
        if isinstance(op, ast.NotIn):
            return a not in b
        if isinstance(op, ast.Is):
            return a is b
        if isinstance(op, ast.IsNot):
            return a is not b
    except TypeError:
        return None
    return None


# -- what a kernel computes in (the source) --------------------------------------------------


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
    if key in stack or len(stack) > _DEPTH:
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
    positional = _positional(callee)
    for param, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        bound[param] = model.values(arg, fn, env)
    for kw in call.keywords:
        if kw.arg is not None:
            bound[kw.arg] = model.values(kw.value, fn, env)
    for param, default in _defaults(callee).items():
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
            precisions = _union([precisions - {None}, model.default_precision])
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
        and _dotted(call.func.value) not in ("tl", "triton.language")
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
    name = _base(expr.func)
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
