"""A candidate's source as far as its arithmetic goes (`SourceModel`): its functions and which
are `@triton.jit`, module-level and local assignments, every call site by callee; `values`
follows an expression to the constants it can take, `truth` a condition to True or False.
`tools.checks.arithmetic_source` scans kernels with it. It reads the candidate's text, never
runs it: in the verifier's (the agent's) process."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tools.checks.arithmetic_kinds import dtype_name
from tools.core.pyast import parse

_TOP = ast.Constant(value=...)  # an assignment whose value cannot be followed
DEPTH = 12


def called_name(func: ast.expr) -> str | None:
    """The called name: `f(...)`, `f[grid](...)`, `obj.f(...)`, `tl.f(...)`."""
    if isinstance(func, ast.Subscript):
        func = func.value
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def dotted_name(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def union_of(sets: Iterable[frozenset | None]) -> frozenset | None:
    out: set = set()
    for s in sets:
        if s is None:
            return None
        out |= s
    return frozenset(out)


def _is_jit(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if dotted_name(target).rsplit(".", 1)[-1] == "jit":
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
        name = called_name(func)
        target = func.value if isinstance(func, ast.Subscript) else func
        for _ in range(DEPTH):
            if not isinstance(target, ast.Name) or name in self.functions:
                return name
            if name in self.imported:
                return self.imported[name]
            bound = self.assigns.get(name)
            if not bound:
                return name
            if len(bound) > 1 or not isinstance(bound[0], ast.Name | ast.Attribute):
                return "?"
            target, name = bound[0], called_name(bound[0])
        return "?"

    def _collect_calls(self, tree: ast.Module) -> None:
        def visit(node: ast.AST, scope: ast.FunctionDef | None) -> None:
            for child in ast.iter_child_nodes(node):
                inner = child if isinstance(child, ast.FunctionDef) else scope
                if isinstance(child, ast.Call) and (name := called_name(child.func)):
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
            elif isinstance(node, ast.Call) and called_name(node.func) in ("setdefault", "putenv"):
                args = node.args
                if len(args) == 2 and ast.unparse(args[0]).strip("'\"") == "TRITON_F32_DEFAULT":
                    values.append(self.values(args[1], None, None))
        if not values:
            return frozenset({None})
        found = union_of(values)
        return None if found is None else found | {None}

    # -- values -----------------------------------------------------------------------------
    def values(
        self, expr: ast.expr, scope: ast.FunctionDef | None, env: Mapping | None, depth: int = 0
    ) -> frozenset | None:
        """The constants `expr` can evaluate to (None: not known). `env`: values of `scope`'s
        parameters (a kernel's recorded constexprs, a helper's arguments)."""
        if depth > DEPTH or expr is _TOP:
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
            return union_of(self.values(p, scope, env, d) for p in parts)
        if isinstance(expr, ast.BoolOp):
            return self._boolop_values(expr, scope, env, d)
        if isinstance(expr, ast.Attribute):
            is_dtype = dtype_name(expr.attr) or re.fullmatch(r"u?int\d+", expr.attr)
            return (
                frozenset({f"dtype:{expr.attr}"})
                if is_dtype and dotted_name(expr) != expr.attr
                else None
            )
        if isinstance(expr, ast.Call):
            name = called_name(expr.func)
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
                return union_of(found)
        if name in self.assigns:
            return union_of(self.values(v, None, None, depth) for v in self.assigns[name])
        return None

    def _param_values(self, fn: ast.FunctionDef, name: str, depth: int) -> frozenset | None:
        """Every value parameter `name` of `fn` gets: its default and each call site's argument
        (a launch `fn[grid](...)` included). Not known where a call passes `*args` / `**kw`
        that may hold it, or where there is no call and no default."""
        default = param_defaults(fn).get(name)
        found: list[frozenset | None] = []
        position = positional_params(fn).index(name) if name in positional_params(fn) else None
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
        return union_of(found)

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
            return union_of(self.values(v, None, None, depth) for v in items)
        if isinstance(table, ast.Dict):
            pairs = [
                (self.values(k, None, None, depth) if k else None, v)
                for k, v in zip(table.keys, table.values, strict=True)
            ]
            if key is not None:
                pairs = [(k, v) for k, v in pairs if k is None or k & key]
            return union_of(self.values(v, None, None, depth) for _, v in pairs)
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


def positional_params(fn: ast.FunctionDef) -> list[str]:
    return [x.arg for x in (*fn.args.posonlyargs, *fn.args.args)]


def param_defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    positional = positional_params(fn)
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
