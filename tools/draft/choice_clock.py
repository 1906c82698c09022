"""One clock for a network's speed choices at draft time (issue 33).

Each speed choice a CUDA draft times on the GPU (convolution variants, GEMM tiles, launch
configs, the sized path's second draft) has its own budget, sized for one operator: 60 s for the
convolution variants, 45 s of launch configs, up to 540 s of draft for the sized path. A whole
network makes every one of them at once, and their sum is what a network's draft took: on the
H200 (session 17, `benchmarks/results/gpu/2026-12-02-s17/call2/level3_time.md`) VGG19's draft
was 182 s (convolution picks 75 s, GEMM tiles 52 s, launch configs 11 s, Inductor 25 s),
EfficientNet's MBConv block 171 s (its sized path 82 s), and eleven of sixteen networks had no
verdict in 500 s.

A draft is a network when it makes more than `NETWORK_SITES` choices (convolution and GEMM
call sites, Inductor kernels launched): KernelBench's level-1 and level-2 problems launch one to
six kernels, its level-3 networks from a few to several hundred. A network's choices share
`NETWORK_CHOICES_S` from the first one: past it, every choice not yet made keeps the draft as
written (the template's default tile and precision, Inductor's launch config), with a note; a
network takes no sized path (a second Inductor compile of every layer, for the pointwise
kernels around its convolutions and GEMMs). An operator's draft is as before: each choice has
its own budget. Either way the draft is verified like any candidate: the clock changes speed,
never what is correct.

The clock is per process: a draft runs in its own draft job (or the command line's process),
and `start` is called once per draft (`tools.draft.job.draft_candidate`).
"""

from __future__ import annotations

from tools.sandboxing import work_clock

NETWORK_SITES = 8
"""More speed choices than this make a draft a network's."""
NETWORK_CHOICES_S = 60.0
"""Seconds a network's speed choices share, from the first one timed."""

_state: dict[str, float | bool] = {"deadline": float("inf"), "network": False, "set": False}


def start() -> None:
    """A new draft: no clock until its first choices are counted (`count`)."""
    _state.update(deadline=float("inf"), network=False, set=False)


def count(sites: int) -> bool:
    """The first count of a draft's speed choices sets its clock (later counts, the sized
    path's static draft, keep it). Returns whether the draft is a network's."""
    if not _state["set"]:
        network = sites > NETWORK_SITES
        _state.update(
            set=True,
            network=network,
            deadline=work_clock.now() + NETWORK_CHOICES_S if network else float("inf"),
        )
    return bool(_state["network"])


def is_network() -> bool:
    return bool(_state["network"])


def deadline(own_budget_s: float = float("inf")) -> float:
    """work_clock.now() at which a choice starting now must stop: its own budget or the
    network's clock, whichever ends first."""
    return min(work_clock.now() + own_budget_s, float(_state["deadline"]))


def spent() -> bool:
    """Whether a network's clock has run out (never for an operator's draft)."""
    return work_clock.now() > float(_state["deadline"])


def spent_note(what: str) -> str:
    return (
        f"{what} not timed: the network's {NETWORK_CHOICES_S:.0f} s of speed choices at draft "
        "time were spent (tools.draft.choice_clock); kept as written"
    )
