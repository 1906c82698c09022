"""What convolution picks write into a draft's calls: each call site's keywords
(`with_keywords`), and a network's tiles pinned at draft time (issue 33): each call written with
the tile its autotuner took in the draft's forward (`autotuned_tile`), so the jobs that run the
candidate compile one tile a layer. Used by `tools.draft.conv_picks.pick_conv_variants`."""

from __future__ import annotations

from typing import Any

from tools.compile.tune import CONV_TILE_KEYS


def autotuners(module: Any) -> list[Any]:
    """The module's `triton.autotune` objects (the convolution kernels' tuned launchers)."""
    from triton.runtime.autotuner import Autotuner

    return [v for v in vars(module).values() if isinstance(v, Autotuner)]


def autotuned_tile(tuners: list[Any], real, args: tuple, kwargs: dict) -> tuple[dict, Any]:
    """Run one convolution call and return (the tile its autotuner chose, as the call's tile
    keywords, or {} where none tuned it now; its output). A network's draft pins each site's
    tile (issue 33): left to the candidate's autotuner, every job that runs the candidate (the
    verification's, the timing's) compiled and timed each tile of each distinct layer again; on
    the H200 (session 19) verification took 24-66 s of candidate runs for level-3 CNNs.
    The tile comes from an autotuner whose cache gained one entry in this call: a call whose
    tuning key an earlier call had already tuned, or that no autotuner runs (a fixed tile, the
    direct kernel), gets none and keeps its keywords."""
    before = [dict(t.cache) for t in tuners]
    out = real(*args, **kwargs)
    new = [
        config
        for t, seen in zip(tuners, before, strict=True)
        for key, config in t.cache.items()
        if key not in seen
    ]
    if len(new) != 1:
        return {}, out
    config = new[0]
    tile = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
    if set(tile) != set(CONV_TILE_KEYS):
        return {}, out
    return {k: tile[k] for k in CONV_TILE_KEYS}, out


def with_keywords(source: str, sites: dict[int, Any], values: dict[int, dict[str, Any]]) -> str:
    """`source` with each site's call given `values[site]` as keywords (added or replaced), in
    one pass over the lines from the last call up, so each call's parsed position stays valid:
    re-parsing the whole draft for every site (as `tools.compile.tune._conv_variant` in a loop did) was
    quadratic in a network's convolutions."""
    import ast

    lines = source.splitlines(keepends=True)
    for site in sorted(values, key=lambda s: (sites[s].lineno, sites[s].col_offset), reverse=True):
        if not values[site]:
            continue
        call = sites[site]
        new = ast.Call(
            func=call.func,
            args=call.args,
            keywords=[k for k in call.keywords if k.arg not in values[site]]
            + [ast.keyword(arg=k, value=ast.Constant(v)) for k, v in values[site].items()],
        )
        first, last = call.lineno - 1, call.end_lineno - 1
        head, tail = lines[first][: call.col_offset], lines[last][call.end_col_offset :]
        lines[first : last + 1] = [head + ast.unparse(new) + tail]
    return "".join(lines)
