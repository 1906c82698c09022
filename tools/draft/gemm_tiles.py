"""Draft-time tile choice for the GEMM template calls of a CUDA draft (issue 15).

A draft's `gemm(...)` calls start from one tile (`tools.kernels.gemm_template.DEFAULT_CONFIG`, 128x128x32,
8 warps, 3 stages). That tile suits a transposed B (level1/17: 1.59x of cuBLAS fp32) and not a
square row-major GEMM (level1/1: 0.69x, while 128x64x32 with 4 warps and 4 stages ran at 1.06x;
H200, session 7). The drafter runs on the GPU with the problem's inputs at their real sizes, so
it times the tile configs there, once, and writes the fastest at each call site:

1. The draft is loaded from a file (Triton needs kernel source on disk) and `ModelNew` is built.
2. Its module-level `gemm` is wrapped. The first time a call site runs, the wrapper times every
   tile of `PICK_TILES` (but those more than twice as tall or wide as the output) on that call's
   own operands (`triton.testing.do_bench`, the minimum of
   its repetitions: other jobs may share the GPU), then runs the call as written.
   Every tile is timed again in two more rounds, each keeping its best time. On a GPU shared
   with other jobs, a burst of their work during one tile's turn can hide the fastest tile: in
   session 8 (one round), level1/13-15, four 4096^3 GEMMs like level1/1, kept tiles timed at
   3.3-3.9 ms where level1/1 picked one at 2.24 ms; with the current tile and the 3 fastest
   timed again (session 9) those three reached 1.18x-1.19x of cuBLAS, but level1/8 picked
   256x64x32 at 12.6 ms where session 8 had picked 32x64x32 at 8.6 ms, likely because a tile
   whose one first-round turn was slow is never timed again (the notes do not keep each tile's
   times). A round of 16 tiles costs a few seconds.
3. A site whose best tile is at least `MIN_GAIN` faster than its current one gets that tile
   written into its keywords (`tools.compile.tune.rewrite`); the notes give both times.

Only the launch parameters change: every tile computes the same GEMM with the same precision,
and the draft is verified afterwards like any candidate. A tile that does not compile or run
(shared memory) is skipped. The choice is for the problem's sizes; at other sizes the tile
is still correct, not necessarily the fastest (the tuner can search again).
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

from tools.checks.timing import Timer
from tools.compile.tune import (
    GEMM_TILE_KEYS,
    GEMM_TILES,
    conv_sites,
    gemm_sites,
    rewrite,
    template_calls,
)
from tools.core import pyast
from tools.draft import choice_clock
from tools.draft.launch_configs import Run, RunTimer, load_module, run_forward

PICK_TILES = GEMM_TILES
"""The tiles timed per call site (the tuner's set; the first is the drafts' default)."""
MIN_GAIN = 0.03
"""A site keeps its tile unless another is at least this much faster (timing noise)."""
ROUNDS = 3
"""Timing rounds: every tile that ran is timed in each, keeping its fastest."""


def call_lines(source: str) -> dict[int, tuple[int, int]]:
    """Site number (`tools.compile.tune.template_calls`) -> the call's first and last line."""
    calls = template_calls(pyast.parse(source))
    return {site: (c.lineno, c.end_lineno or c.lineno) for site, c in enumerate(calls)}


def pick_tiles(
    source: str,
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    *,
    timer: RunTimer = Timer.fastest_ms,
    tiles: tuple[tuple[int, ...], ...] = PICK_TILES,
) -> tuple[str, list[str]]:
    """`source` with each GEMM call site's fastest tile written in, and a note per site.

    Runs the draft's forward once on `inputs` (its `ModelNew` built from `init_inputs` on
    `device`), timing `tiles` at each `gemm(...)` site the forward reaches (`_time_sites`).
    `timer` takes a `Run` (a zero-argument call; `info` has the site and the tile) and returns
    milliseconds (tests pass a scripted one). The picks and notes: `_picked_tiles`.
    """
    sites = {s: k for s, k in gemm_sites(source).items() if s not in conv_sites(source) and k}
    if not sites:
        return source, []
    seen = _time_sites(source, sites, init_inputs, inputs, device, timer, tiles)
    changes, notes = _picked_tiles(sites, *seen)
    return (rewrite(source, changes) if changes else source), notes


def _time_sites(
    source: str,
    sites: dict[int, Any],
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    timer: RunTimer,
    tiles: tuple[tuple[int, ...], ...],
) -> tuple[dict[int, list[tuple[float, dict[str, Any]]]], dict[int, str], dict[int, int], set[int]]:
    """Run the draft's forward with its `gemm` replaced: the first call at each site in `sites`
    times the tiles there (`_time_tiles`), every call then runs as written. Returns (each
    site's timings, its operands' shapes, its tiles that did not run, the sites that are
    matrix-vector products)."""
    import torch

    spans = call_lines(source)
    timings: dict[int, list[tuple[float, dict[str, Any]]]] = {}
    shapes: dict[int, str] = {}
    failures: dict[int, int] = {}
    vectors: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="gemm_tiles_") as workdir:
        module = load_module(source, workdir, "draft_candidate_tiles", share=True)
        real = module.gemm

        def timed_gemm(*args: Any, **kwargs: Any) -> Any:
            line = sys._getframe(1).f_lineno
            site = next(
                (s for s, (a, b) in spans.items() if s in sites and a <= line <= b), None
            )  # fmt: skip
            if site is None or site in timings:
                return real(*args, **kwargs)
            a, b = args[0], args[1]
            shapes[site] = f"{'x'.join(map(str, a.shape))} @ {'x'.join(map(str, b.shape))}"
            if b.shape[-1] == 1:  # a matrix-vector product runs the GEMV kernel: no tile
                vectors.add(site)
                timings[site] = []
                return real(*args, **kwargs)
            if choice_clock.spent():  # a network's speed choices are over: not timed
                timings[site] = []
                return real(*args, **kwargs)
            trial = dict(kwargs)
            out = kwargs.get("out")
            if out is not None and any(
                isinstance(t, torch.Tensor) and t.data_ptr() == out.data_ptr()
                for t in (*args, kwargs.get("bias"))
            ):
                trial["out"] = torch.empty_like(out)  # out is also an operand: keep it intact
            current = {k: kwargs.get(k) for k in GEMM_TILE_KEYS}
            timings[site] = _time_tiles(real, args, trial, current, site, timer, tiles, failures)
            return real(*args, **kwargs)

        module.gemm = timed_gemm
        run_forward(module, init_inputs, inputs, device)
    return timings, shapes, failures, vectors


def _time_tiles(
    real: Any,
    args: tuple,
    trial: dict[str, Any],
    current: dict[str, Any],
    site: int,
    timer: RunTimer,
    tiles: tuple[tuple[int, ...], ...],
    failures: dict[int, int],
) -> list[tuple[float, dict[str, Any]]]:
    """One site's tiles timed, the call's own first (`current`), each kept at its best over
    `ROUNDS`; a tile that does not run (shared memory, registers) is counted in `failures`.
    Returns [(ms, tile)], the call's own first."""

    def time_tile(values: dict[str, Any]) -> float:
        def run() -> Any:
            return real(*args, **{**trial, **values})

        return timer(Run(run, f"gemm#{site} {_tile(values)}", {"site": site, **values}))

    results: list[tuple[float, dict[str, Any]]] = []
    rows, cols = args[0].shape[-2], args[1].shape[-1]
    for tile in (tuple(current[k] for k in GEMM_TILE_KEYS), *tiles):
        values = dict(zip(GEMM_TILE_KEYS, tile, strict=True))
        if results and (values == results[0][1] or _too_big(values, rows, cols)):
            continue
        if results and choice_clock.spent():
            break
        try:
            results.append((time_tile(values), values))
        except Exception:  # out of shared memory or registers: not a candidate tile
            failures[site] = failures.get(site, 0) + 1
    # Other jobs may share the GPU in bursts: every tile is timed again in later rounds, each
    # keeping its best, so one burst during one tile's turn does not decide.
    for _ in range(ROUNDS - 1):
        if choice_clock.spent():
            break
        for i in range(len(results)):
            ms, values = results[i]
            results[i] = (min(ms, time_tile(values)), values)
    return results


def _picked_tiles(
    sites: dict[int, Any],
    timings: dict[int, list[tuple[float, dict[str, Any]]]],
    shapes: dict[int, str],
    failures: dict[int, int],
    vectors: set[int],
) -> tuple[dict[Any, Any], list[str]]:
    """Each timed site's fastest tile where it beats the call's own by `MIN_GAIN`, and a note
    per site (matrix-vector, none ran, picked or kept, not reached). Returns (the changes to
    the call sites' tile keywords, the notes)."""
    changes: dict[Any, Any] = {}
    notes = []
    for site, results in sorted(timings.items()):
        if site in vectors:
            notes.append(
                f"gemm#{site} ({shapes[site]}): a matrix-vector product, run by the template's "
                "GEMV kernel (no tile to pick)"
            )
            continue
        if not results:
            notes.append(
                f"gemm#{site}: no tile ran at draft time; kept as written"
                if failures.get(site)
                else choice_clock.spent_note(f"gemm#{site}")
            )
            continue
        now_ms, now = results[0]
        best_ms, best = min(results, key=lambda r: r[0])
        failed = f", {failures[site]} did not run" if failures.get(site) else ""
        timed = f"{len(results)} tiles timed{failed}"
        if best is not now and best_ms <= now_ms * (1 - MIN_GAIN):
            knobs = sites[site]
            changes.update(
                {knobs[k]: v for k, v in best.items() if k in knobs and knobs[k].value != v}
            )
            notes.append(
                f"gemm#{site} ({shapes[site]}): tile {_tile(best)} picked on the GPU at draft time, "
                f"{best_ms:.3f} ms against {now_ms:.3f} ms for {_tile(now)} ({timed})"
            )
        else:
            notes.append(
                f"gemm#{site} ({shapes[site]}): tile {_tile(now)} kept at draft time, {now_ms:.3f} ms, "
                f"the fastest within {MIN_GAIN:.0%} ({timed})"
            )
    missed = sorted(set(sites) - set(timings))
    if missed:
        notes.append(
            "gemm#"
            + ", gemm#".join(map(str, missed))
            + ": not reached by the forward; kept as written"
        )
    return changes, notes


def _too_big(values: dict[str, Any], rows: int, cols: int) -> bool:
    """A tile more than twice as tall or wide as the output (16 at least): mostly masked work."""
    return values["BLOCK_M"] > 2 * max(rows, 8) or values["BLOCK_N"] > 2 * max(cols, 8)


def _tile(values: dict[str, Any]) -> str:
    return (
        f"{values['BLOCK_M']}x{values['BLOCK_N']}x{values['BLOCK_K']} group {values['GROUP_M']}, "
        f"{values['num_warps']} warps, {values['num_stages']} stages"
    )
