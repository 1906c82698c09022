"""Launch-parameter variants of a candidate: block-size constexprs, `num_warps`, `num_stages`,
and for this project's GEMM template (`tools.kernels.gemm_template`) whole tile configs, split-K and the
`tl.dot` input precision; for its convolutions (`triton_convolution`, tools.kernels.triton_conv) whole
tile configs and the input precision, added as keywords to the call.

Pure source-to-source rewriting (no LLM, no GPU): find the constants that set launch
parameters — keyword arguments of `kernel[grid](...)` and `gemm(...)` calls and UPPER_CASE
`*BLOCK*` assignments inside launcher functions — and produce variants with other values. The
tuner (`agent.tuning`) verifies and times each variant on a GPU and keeps the fastest correct
one; variants that break the kernel are simply rejected by verification. So a `precision="tf32"`
variant (one TF32 product, ~10-bit mantissa) is kept only where it passes the problem's
tolerance, which at fp32's 1e-4 it normally does not.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tools.core import pyast
from tools.kernels.gemm_template import GEMM_FUNCTIONS, PRECISIONS
from tools.kernels.triton_conv import CONV_FUNCTIONS, CONV_PRECISIONS

WARPS = (2, 4, 8, 16)
STAGES = (1, 2, 3, 4)
BLOCK_MIN, BLOCK_MAX = 16, 16384


@dataclass(frozen=True)
class Knob:
    """One tunable integer literal in the source."""

    name: str
    value: int | str
    lineno: int
    col: int
    end_col: int
    site: int = -1
    """For a `gemm(...)` call's keyword: which GEMM call in the source (0, 1...); else -1."""

    @property
    def kind(self) -> str:
        if self.name == "num_warps":
            return "warps"
        if self.name == "num_stages":
            return "stages"
        if self.name == "precision":
            return "precision"
        if self.name == "GROUP_M":
            return "group"
        if self.name == "SPLIT_K":
            return "split"
        return "block"


GEMM_TILES = (
    # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) for fp32 tf32x3 on Hopper:
    # Triton's and Inductor's mm configs; shared memory (BM + BN) * BK * 4 B * stages <= 228 KB.
    (128, 128, 32, 8, 8, 3),
    (128, 256, 32, 8, 8, 3),
    (256, 128, 32, 8, 8, 3),
    (128, 128, 64, 8, 8, 2),
    (64, 128, 32, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 256, 32, 8, 8, 3),
    (128, 128, 32, 8, 4, 4),
    (64, 64, 64, 8, 4, 3),
    (32, 64, 32, 8, 4, 5),
    (16, 128, 64, 8, 4, 3),
    # Around 128x64x32 at 4 warps, the only tile near cuBLAS fp32 on a square row-major 4096^3
    # (1.06x; the others 0.33x-0.72x; H200, session 7's tuner on level1/1).
    (128, 64, 64, 8, 4, 3),
    (256, 64, 32, 8, 8, 4),
    (128, 64, 32, 8, 4, 5),
    # Narrow outputs (a matrix-vector product: N=1): 16 columns, the least tl.dot takes.
    (64, 16, 128, 8, 4, 3),
    (128, 16, 64, 8, 4, 4),
)
"""Tile configs the tuner tries for each GEMM call (the first is the drafts' default)."""
HALF_GEMM_TILES = (
    # The same for bf16/fp16 operands (2 bytes: twice the K of a tile in the same shared memory,
    # (BM + BN) * BK * 2 B * stages <= 228 KB), the first a half-precision draft's default
    # (`tools.kernels.gemm_template.HALF_CONFIG`): Triton's and Inductor's fp16 configs on Hopper.
    # Compiled for sm_90 at 4096^3 fp16 (`_gemm_tc_kernel`, ptxas -v): every tile pipelined
    # (cp.async), wgmma f16 but for the 16-row one (too short for wgmma), no spills but for its
    # 4 bytes; 128x256x64/8 warps/3 stages 197 registers, 128x128x64/8/4 118.
    (128, 256, 64, 8, 8, 3),
    (128, 128, 64, 8, 8, 4),
    (256, 128, 64, 8, 8, 3),
    (128, 256, 32, 8, 8, 4),
    (128, 128, 32, 8, 4, 4),
    (64, 256, 32, 8, 4, 4),
    (128, 64, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (64, 64, 64, 8, 4, 4),
    (128, 128, 128, 8, 8, 3),
    (64, 32, 64, 8, 4, 5),
    (16, 128, 64, 8, 4, 4),
    (64, 16, 128, 8, 4, 4),
)
"""Tile configs the tuner tries for each GEMM call of a bf16/fp16 draft (`half_precision`)."""
GEMM_TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
SPLITS = (0, 1, 4, 16, 64)
"""Split-K values tried (0: chosen from the shapes at run time)."""

CONV_TILES = (
    # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for the implicit-GEMM convolution
    # (tools.kernels.triton_conv), the first its autotuner's first. sm_90, tf32x3, ptxas -v on the
    # level-1 conv classes: 128x64x32/8 warps no spills; 128x128 tiles spill on transposed
    # 2D/3D or the 3-channel stem but not on 1D or pointwise; 256x64 and 128x64 at 4 warps
    # spill on all (not here). BLOCK_M is also the direct (depthwise) kernel's block.
    (128, 64, 32, 8, 3),
    (128, 128, 16, 8, 4),
    (64, 128, 32, 8, 3),
    (128, 32, 32, 8, 3),
    (128, 128, 32, 8, 3),
    (128, 64, 16, 8, 4),
    (64, 64, 32, 4, 3),
    (1024, 64, 32, 4, 3),
    (512, 64, 32, 4, 3),
    (2048, 64, 32, 8, 3),
)
"""Tile configs the tuner tries for each `triton_convolution` call (not given: autotuned)."""
CONV_TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")


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
    tree = pyast.parse(source)
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
    for site, call in enumerate(template_calls(tree)):
        for kw in call.keywords:
            v = kw.value
            if kw.arg and isinstance(v, ast.Constant) and type(v.value) in (int, str):
                if kw.arg in GEMM_TILE_KEYS + ("SPLIT_K", "precision"):
                    knobs.append(
                        Knob(kw.arg, v.value, v.lineno, v.col_offset, v.end_col_offset, site)
                    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):  # kernel[grid]
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


def _is_gemm_call(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in GEMM_FUNCTIONS


def _is_conv_call(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in CONV_FUNCTIONS


def template_calls(tree: ast.AST) -> list[ast.Call]:
    """The `gemm(...)` and `triton_convolution(...)` calls, in walk order: a call's index here
    is its site number everywhere (`find_knobs`, `conv_sites`, the draft-time tile choice)."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (_is_gemm_call(node) or _is_conv_call(node))
    ]


def conv_sites(source: str) -> dict[int, ast.Call]:
    """The `triton_convolution` calls in the source: site -> call (sites numbered with the GEMM
    calls', `template_calls`). Drafts call it without keywords: every knob of a site is then a
    keyword to add (`conv_variants`)."""
    calls = template_calls(pyast.parse(source))
    return {site: call for site, call in enumerate(calls) if _is_conv_call(call)}


def _conv_variant(source: str, site: int, call: ast.Call, values: dict) -> tuple[str, str]:
    """The source with the conv call's keywords set to `values` (added or replaced)."""
    new = ast.Call(
        func=call.func,
        args=call.args,
        keywords=[k for k in call.keywords if k.arg not in values]
        + [ast.keyword(arg=k, value=ast.Constant(v)) for k, v in values.items()],
    )
    lines = source.splitlines(keepends=True)
    first, last = call.lineno - 1, call.end_lineno - 1
    head = lines[first][: call.col_offset]
    tail = lines[last][call.end_col_offset :]
    text = "".join(lines[:first]) + head + ast.unparse(new) + tail + "".join(lines[last + 1 :])
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"conv#{site}: {shown}", text


def conv_variants(source: str, stage: str = "tiles", limit: int = 16) -> list[tuple[str, str]]:
    """Variants of the `triton_convolution` calls: `stage="tiles"`: each call with each of
    `CONV_TILES`; `stage="split_precision"`: each call with the other tl.dot input precisions
    (`CONV_PRECISIONS`; verification decides which the problem's tolerance allows), and
    tf32x3 with the weights split in memory first (`SPLIT_W=True`, same accuracy), and the
    weights read as they are rather than repacked (`PACK_W=False`)."""
    out: list[tuple[str, str]] = []
    for site, call in conv_sites(source).items():
        current = {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)}
        if stage == "tiles":
            changes = [dict(zip(CONV_TILE_KEYS, tile, strict=True)) for tile in CONV_TILES]
        elif stage == "split_precision":
            now = current.get("precision", CONV_PRECISIONS[0])
            changes = [{"precision": p} for p in CONV_PRECISIONS if p != now]
            if now == "tf32x3" and not current.get("SPLIT_W"):  # tf32x3, weights split first
                changes.append({"SPLIT_W": True})
            if current.get("PACK_W") is not False:  # the weights as they are, not repacked
                changes.append({"PACK_W": False})
        else:
            raise ValueError(f"unknown convolution tuning stage {stage!r}")
        for values in changes:
            if all(current.get(k) == v for k, v in values.items()):
                continue
            out.append(_conv_variant(source, site, call, values))
            if len(out) >= limit:
                return out
    return out


def candidates_for(knob: Knob) -> list[int | str]:
    if knob.kind == "precision":
        return [p for p in PRECISIONS if p != knob.value]
    if knob.kind == "group":
        return [g for g in (1, 4, 8, 16) if g != knob.value]
    if knob.kind == "split":
        return [k for k in SPLITS if k != knob.value]
    if not isinstance(knob.value, int):
        return []
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
        lines[knob.lineno - 1] = line[: knob.col] + repr(value) + line[knob.end_col :]
    return "".join(lines)


def describe(changes: dict[Knob, int | str]) -> str:
    return (
        ", ".join(f"{k.name}={v} (was {k.value}, line {k.lineno})" for k, v in changes.items())
        or "original"
    )


def gemm_sites(source: str) -> dict[int, dict[str, Knob]]:
    """The GEMM template calls in the source: site -> {keyword: knob}."""
    sites: dict[int, dict[str, Knob]] = {}
    for knob in find_knobs(source):
        if knob.site >= 0:
            sites.setdefault(knob.site, {})[knob.name] = knob
    for site in conv_sites(source):  # convolutions: tiles and precision, keywords or not
        sites.setdefault(site, {})
    return dict(sorted(sites.items()))


def _gemm_variant(source: str, site: int, knobs: dict[str, Knob], values: dict) -> tuple[str, str]:
    changes = {knobs[k]: v for k, v in values.items() if k in knobs and knobs[k].value != v}
    shown = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"gemm#{site}: {shown}", rewrite(source, changes)


def gemm_variants(source: str, stage: str = "tiles", limit: int = 16) -> list[tuple[str, str]]:
    """Variants of the GEMM calls: `stage="tiles"`: each call with each of `GEMM_TILES`;
    `stage="split_precision"`: each call with other split-K values and input precisions (run
    it on the best of the tiles stage). A bf16/fp16 draft's calls (`half_precision`) take
    `HALF_GEMM_TILES` and no precision variants (the same kernel for 2-byte operands). Empty
    when the source has no GEMM template call."""
    out: list[tuple[str, str]] = []
    convs = conv_sites(source)
    half = half_precision(source)
    for site, knobs in gemm_sites(source).items():
        if site in convs:
            continue
        current = {k: knobs[k].value for k in knobs}
        if stage == "tiles":
            tiles = HALF_GEMM_TILES if half else GEMM_TILES
            changes = [dict(zip(GEMM_TILE_KEYS, tile, strict=True)) for tile in tiles]
        elif stage == "split_precision":
            changes = [{"SPLIT_K": k} for k in SPLITS if k != current.get("SPLIT_K")]
            if not half:  # 2-byte operands: tl.dot ignores the input precision
                changes += [{"precision": p} for p in PRECISIONS if p != current.get("precision")]
        else:
            raise ValueError(f"unknown GEMM tuning stage {stage!r}")
        for values in changes:
            if all(current.get(k) == v for k, v in values.items()):
                continue
            out.append(_gemm_variant(source, site, knobs, values))
            if len(out) >= limit:
                return out
    if convs and len(out) < limit:
        out += conv_variants(source, stage, limit - len(out))
    return out


def half_precision(source: str) -> bool:
    """Whether `source` is a bf16/fp16 draft's: it holds the GEMM template's tensor-core kernel
    (`tools.kernels.gemm_template.gemm_source`), whose tiles are `HALF_GEMM_TILES`."""
    return "def _gemm_tc_kernel(" in source


def precisions(source: str) -> list[str]:
    """The `tl.dot` input precisions a candidate's GEMM template and convolution calls use, in
    call order (a convolution call without the keyword uses tf32x3, `CONV_PRECISIONS[0]`)."""
    given = {
        k.site: str(k.value) for k in find_knobs(source) if k.site >= 0 and k.kind == "precision"
    }
    for site in conv_sites(source):
        given.setdefault(site, CONV_PRECISIONS[0])
    return [given[site] for site in sorted(given)]


def one_at_a_time(source: str, limit: int = 16) -> list[tuple[str, str]]:
    """Variants changing one knob at a time (coordinate search's first sweep), at most `limit`.
    GEMM template calls are left to `gemm_variants` (their tile sizes go together)."""
    out: list[tuple[str, str]] = []
    for knob in (k for k in find_knobs(source) if k.site < 0):
        for value in candidates_for(knob):
            change = {knob: value}
            out.append((describe(change), rewrite(source, change)))
            if len(out) >= limit:
                return out
    return out


def full_precision_variant(source: str) -> str | None:
    """The candidate with every GEMM template and convolution call at `precision="ieee"` (full
    fp32 products), or None when none uses a reduced precision (tf32x3, bf16x3, tf32).

    tf32x3 is about as accurate as fp32 per output, but its rounding is not unbiased: where a
    problem sums thousands of GEMM outputs that nearly cancel (KernelBench level2/14, a sum over
    8192 outputs of a GEMM on positive inputs), the error adds up past fp32's tolerance. The
    loop tries this variant when a reduced-precision draft is a mismatch (agent.nodes).
    A convolution call with a fused epilogue (`EPILOGUE=`, tools/draft/conv_epilogue.py) keeps
    its bf16x3: its kernel is the split GEMM's copy, which has no other precision.
    """
    if "ieee" not in PRECISIONS or "ieee" not in CONV_PRECISIONS:
        return None
    convs = conv_sites(source)
    reduced = [
        k
        for k in find_knobs(source)
        if k.kind == "precision" and k.site not in convs and k.value != "ieee"
    ]
    out = rewrite(source, {k: "ieee" for k in reduced}) if reduced else source
    changed = bool(reduced)
    # Conv calls: the keyword added or replaced, the last call first (earlier text stays put).
    calls = sorted(conv_sites(out).items(), key=lambda sc: (sc[1].lineno, sc[1].col_offset))
    for site, call in reversed(calls):
        if any(k.arg == "EPILOGUE" for k in call.keywords):
            continue
        now = next(
            (k.value.value for k in call.keywords
             if k.arg == "precision" and isinstance(k.value, ast.Constant)),
            CONV_PRECISIONS[0],
        )  # fmt: skip
        if now != "ieee":
            _, out = _conv_variant(out, site, call, {"precision": "ieee"})
            changed = True
    return out if changed else None
