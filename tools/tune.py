"""Launch-parameter variants of a candidate: block-size constexprs, `num_warps`, `num_stages`.

Pure source-to-source rewriting (no LLM, no GPU): find the integer constants that set launch
parameters — keyword arguments of `kernel[grid](...)` calls and UPPER_CASE `*BLOCK*` assignments
inside launcher functions — and produce variants with other values. The tuner
(`agent.tuning`) verifies and times each variant on a GPU and keeps the fastest correct one;
variants that break the kernel are simply rejected by verification.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

WARPS = (2, 4, 8, 16)
STAGES = (1, 2, 3, 4)
BLOCK_MIN, BLOCK_MAX = 16, 16384


@dataclass(frozen=True)
class Knob:
    """One tunable integer literal in the source."""

    name: str
    value: int
    lineno: int
    col: int
    end_col: int

    @property
    def kind(self) -> str:
        if self.name == "num_warps":
            return "warps"
        if self.name == "num_stages":
            return "stages"
        return "block"


def _is_block_name(name: str) -> bool:
    up = name.upper()
    return "BLOCK" in up or up in (
        "XBLOCK",
        "YBLOCK",
        "RBLOCK",
        "R0_BLOCK",
        "BM",
        "BN",
        "BK",
        "TILE",
    )


def find_knobs(source: str) -> list[Knob]:
    """Integer literals that set launch parameters, in source order."""
    tree = ast.parse(source)
    knobs: list[Knob] = []
    for stmt in tree.body:  # module-level constants such as `BLOCK_SIZE = 1024`
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id.isupper()
            and _is_block_name(stmt.targets[0].id)
            and isinstance(stmt.value, ast.Constant)
            and type(stmt.value.value) is int
        ):
            v = stmt.value
            knobs.append(
                Knob(stmt.targets[0].id, v.value, v.lineno, v.col_offset, v.end_col_offset)
            )
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):  # kernel[grid](...)
            for kw in node.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant) and type(kw.value.value) is int:
                    if kw.arg in ("num_warps", "num_stages") or _is_block_name(kw.arg):
                        knobs.append(
                            Knob(
                                kw.arg,
                                kw.value.value,
                                kw.value.lineno,
                                kw.value.col_offset,
                                kw.value.end_col_offset,
                            )
                        )
        elif isinstance(node, ast.FunctionDef) and not any(
            "jit" in ast.unparse(d) or "autotune" in ast.unparse(d) for d in node.decorator_list
        ):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    and _is_block_name(stmt.targets[0].id)
                    and isinstance(stmt.value, ast.Constant)
                    and type(stmt.value.value) is int
                ):
                    v = stmt.value
                    knobs.append(
                        Knob(stmt.targets[0].id, v.value, v.lineno, v.col_offset, v.end_col_offset)
                    )
    knobs.sort(key=lambda k: (k.lineno, k.col))
    return knobs


def candidates_for(knob: Knob) -> list[int]:
    if knob.kind == "warps":
        return [w for w in WARPS if w != knob.value]
    if knob.kind == "stages":
        return [s for s in STAGES if s != knob.value]
    vals = [knob.value // 4, knob.value // 2, knob.value * 2, knob.value * 4]
    return [v for v in vals if BLOCK_MIN <= v <= BLOCK_MAX and v & (v - 1) == 0 and v != knob.value]


def rewrite(source: str, changes: dict[Knob, int]) -> str:
    """The source with each knob's literal replaced (positions from `find_knobs`)."""
    lines = source.splitlines(keepends=True)
    for knob, value in sorted(
        changes.items(), key=lambda kv: (kv[0].lineno, kv[0].col), reverse=True
    ):
        line = lines[knob.lineno - 1]
        lines[knob.lineno - 1] = line[: knob.col] + str(value) + line[knob.end_col :]
    return "".join(lines)


def describe(changes: dict[Knob, int]) -> str:
    return (
        ", ".join(f"{k.name}={v} (was {k.value}, line {k.lineno})" for k, v in changes.items())
        or "original"
    )


def one_at_a_time(source: str, limit: int = 16) -> list[tuple[str, str]]:
    """Variants changing one knob at a time (coordinate search's first sweep), at most `limit`."""
    out: list[tuple[str, str]] = []
    for knob in find_knobs(source):
        for value in candidates_for(knob):
            change = {knob: value}
            out.append((describe(change), rewrite(source, change)))
            if len(out) >= limit:
                return out
    return out
