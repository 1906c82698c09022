"""Draft-time choices on the GPU as a draft job makes them: each one a speed choice that leaves
the draft as it was when it fails (`draft_time_choice`), and Inductor's launch configs chosen
again (`with_picked_configs`) once a draft job, for the kernels the candidate runs at the
problem's sizes (issue 33).

Until session 16 the launch configs were timed inside each draft: a CUDA draft that tries the
sized path (`tools/draft/sized.py`) timed them for the dynamic draft, then again for the static
one, before the sized path's own timing chose between the two; whichever lost had been tuned
for nothing. On the H200 that was 17-52 s a draft, twice, for level-3 networks (session 15:
up to 45 s of first-round timing each, `launch_configs.BUDGET_S`). Now the draft job keeps
each draft's candidates (`config_candidates`, plain data) and times them once, after the sized
path's choice: the static draft's kernels (with the sized path's suffix) where it was taken,
the dynamic draft's otherwise. The two forwards the sized path compares are then both as
Inductor configured them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tools.sandboxing import work_clock

POINTWISE_BLOCKS = ((1024, 4), (2048, 8), (512, 8))
"""(XBLOCK, num_warps) offered to one-dimensional pointwise kernels besides Inductor's own
configs (their kernels mask every block, so any block is correct). On the H200, level1/20, 21,
25, 27, 28 and 30 ran their streaming kernel at XBLOCK=512 with 8 warps (3.29-3.39 ms) where
1024 with 4 warps ran at 3.03 ms (session 8), and in session 9's second run their drafts had
no other config of Inductor's to time (no launch-config note at all)."""

Candidates = tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]
"""(kernel -> the launch keyword values to try, kernel -> the values it launches with now)."""


def draft_time_choice(
    pick: Callable, what: str, source: str, problem: Any, notes: list[str]
) -> str:
    """`pick(source, init_inputs, inputs, "cuda")` -> (source, notes): a choice timed on the GPU
    at draft time (convolution variants, GEMM tiles, launch configs). It is a speed choice, not a
    correctness one: when it fails, the draft stays as it was and a note says why."""
    from tools.draft import choice_clock
    from tools.draft.capture import first_line

    if choice_clock.spent():
        notes.append(choice_clock.spent_note(what))
        return source
    try:
        picked, more = pick(source, list(problem.module.get_init_inputs()), problem.inputs, "cuda")
    except Exception as exc:
        notes.append(f"{what} not timed at draft time ({type(exc).__name__}: {first_line(exc)})")
        return source
    notes.extend(more)
    return picked


def config_candidates(kernels: dict, launched: list[str]) -> Candidates:
    """Each launched Inductor kernel's configs to time: Inductor's own (and, for 1-D pointwise
    kernels, `POINTWISE_BLOCKS`), and the one it launches with now."""
    from tools.draft.kernels import kernel_params
    from tools.draft.launch_configs import config_values

    candidates, current = {}, {}
    for name in dict.fromkeys(launched):
        kernel = kernels.get(name)
        if kernel is None or kernel.config is None:
            continue
        constexprs = kernel_params(kernel)[1]
        configs = list(getattr(kernel.autotuner, "configs", None) or [])
        now = config_values(kernel.config, constexprs)
        values = [config_values(c, constexprs) for c in configs]
        if set(now) == {"XBLOCK", "num_warps", "num_stages"}:  # 1-D pointwise: any block
            values += [
                {**now, "XBLOCK": block, "num_warps": warps} for block, warps in POINTWISE_BLOCKS
            ]
        candidates[name] = [v for i, v in enumerate(values) if v not in values[:i]]
        current[name] = now
    return candidates, current


def renamed(found: Candidates, source: str, suffix: str) -> Candidates:
    """A static draft's candidates under the names its kernels have in the two-path `source`
    (`tools.draft.sized`: `name + suffix` where the dynamic draft has another kernel of that
    name, `name` where it is the same kernel or only the static draft has it)."""
    candidates, current = found
    launched = _launched(source)
    names = {n: n + suffix if n + suffix in launched else n for n in candidates}
    return (
        {names[n]: v for n, v in candidates.items()},
        {names[n]: v for n, v in current.items() if n in names},
    )


def with_picked_configs(source: str, problem: Any, found: Candidates, notes: list[str]) -> str:
    """Each kernel's launch config chosen again among `found`'s by timing the forward in
    repeated rounds (tools.draft.launch_configs)."""
    from tools.draft.launch_configs import pick_configs

    candidates, current = found

    def pick(src: str, init_inputs: list, inputs: list, device: str) -> tuple[str, list[str]]:
        return pick_configs(src, candidates, current, init_inputs, inputs, device)

    return draft_time_choice(pick, "launch configs", source, problem, notes)


def timed_once(source: str, problem: Any, found: Candidates, notes: list[str]) -> str:
    """`with_picked_configs` for the kernels `source` launches (an epilogue fused into a
    convolution's store is no launch of its own any more), with a note in the form of a
    draft's phase note ("final draft took ...: launch configs ..."), which the bench records
    read as `draft.final.*`."""
    candidates, current = found
    launched = _launched(source)
    kept = [n for n in candidates if n in current and n in launched]
    found = ({n: candidates[n] for n in kept}, {n: current[n] for n in kept})
    started = work_clock.now()
    source = with_picked_configs(source, problem, found, notes)
    spent = work_clock.now() - started
    notes.append(f"final draft took {spent:.1f} s: launch configs {spent:.1f} s")
    return source


def _launched(source: str) -> set[str]:
    """The names `source` launches as `name[grid](...)` (or subscripts otherwise), in one scan:
    a search per kernel was the kernels times the file, both growing with a network's depth."""
    return set(re.findall(r"(?<![\w.])(\w+)\[", source))
