"""The GPU's rule for work decided inside a launch (issue 34): a launch that takes far less
device time on a trial's repeated inputs than the same launch took on fresh ones did other
work. Pure: the candidate's job measures (`tools.compile.launch_record.note_launch_times`), the verdict
rules (`tools.orchestrate.verdict_rules`) call `repeated_work` here, outside the candidate's process.

The CPU's counterpart is the interpreter's per-launch element counts (`tools.job.interp_checks`,
`tools.compile.launch_record.with_counts`), compared in the candidate's job. docs/verification.md,
"Inside a launch", says why these numbers.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

RATIO = 0.7
"""A repeated run's launch is suspect below this fraction of the launch's fastest fresh-input
time. The times are device times (`tools.compile.launch_record.DeviceHold` keeps the host's launch
path out of the window): the same kernel on the same data repeats to within a few percent, and
what else disturbs a window (another process's kernels on a shared GPU, a lower clock) only
lengthens it. The corpus's memos skip to 0.5x (a flag) and 0.58x (a loop bound) of their GEMM
at 67x129x95 on the H200 (session 17), to 0.07-0.09x at 1024^3."""

FLOOR_MS = 0.002
"""...and at least this much (2 us) below it: under that, a kernel's own launch-to-launch
variation. Session 17 ran 0.3x and 50 us while the windows still held the host's launch path
(up to 0.2 ms on a loaded GPU): that rule let the small memos through (a known limit then)."""

CONFIRMATIONS = 2
"""Trials in which the same launch must be suspect before the verdict refuses it."""

FRESH = ("first", "unchecked", "control")
"""The runs on fresh inputs: a trial's first run, the unchecked calls before the first
unannounced trial, and each timed trial's control call (`tools.job.worker`: new values after the
trial's repeated run, its arguments copied as a repeated run's are: a repeat's position)."""


def repeated_work(data: dict[str, Any], notes: list[str]) -> list[str]:
    """The repeated-input findings of a candidate's job (`data`, its reply): what the job
    found itself (`repeated_work`: launch counts, traces, the interpreter's element counts)
    and, from the device times it measured (`launch_times`), the launches the rule below
    refuses. A suspect launch seen in one trial only is a note, not a finding."""
    found = [str(r)[:400] for r in data.get("repeated_work") or []]
    timed, unconfirmed = faster_on_repeats(data.get("launch_times") or [])
    notes.extend(unconfirmed)
    return found + timed


def faster_on_repeats(runs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The device-time rule over a verification's timed runs (`runs`: one entry per timed run
    of a trial that is not exempt, `{"trial", "run", "launches": [[kernel, grid, digest, ms],
    ...]}`, `run` one of `FRESH` or a repeated run's). Returns (findings, notes).

    Launch i of a trial's repeated run is compared with launch i of the same trial's first run
    where both have the same trace digest (same kernel, grid, arguments). It is suspect when
    it took less than `RATIO` of, and `FLOOR_MS` less than, the *fastest* time of that launch
    (the same launch i, the same digest) in any fresh-input run of any trial, and only where
    a control call (fresh values in a repeat's position) timed that launch: an honest launch
    can be faster in a trial's second run than in its first for its position alone (warm
    caches, lock words, fresh argument copies: the spin-lock kernel of the corpus, 0.17 ms
    first, 0.04 ms after, on the H200), and the control run is as fast then. A fresh run slowed
    by the machine (a host delay inside the event window, another process's kernels, clocks)
    only raises one of the times the fastest is taken over. A launch suspect in
    `CONFIRMATIONS` trials is a finding ("cheat"); in fewer, or without a control, a note."""
    firsts: dict[int, list] = {}
    repeats: list[tuple[int, str, list]] = []
    fastest: dict[tuple[int, str], float] = {}
    controlled: set[tuple[int, str]] = set()
    for entry in runs:
        trial, run, launches = int(entry["trial"]), str(entry["run"]), list(entry["launches"])
        if run not in FRESH:
            repeats.append((trial, run, launches))
            continue
        if run == "first":
            firsts[trial] = launches
        for i, (_name, _grid, digest, ms) in enumerate(launches):
            if ms is not None:
                key = (i, str(digest))
                fastest[key] = min(float(ms), fastest.get(key, float("inf")))
                if run == "control":
                    controlled.add(key)
    suspects: dict[tuple[int, str], list[tuple[int, str]]] = defaultdict(list)
    for trial, run, launches in repeats:
        for i, (first, again) in enumerate(zip(firsts.get(trial, []), launches)):
            if first[2] != again[2] or first[3] is None or again[3] is None:
                continue
            key = (i, str(first[2]))
            best, ms = fastest[key], float(again[3])
            if ms < RATIO * best and best - ms > FLOOR_MS:
                said = _describe(trial, run, i, again, float(first[3]), ms, best)
                suspects[key].append((trial, said))
    return _confirmed(suspects, controlled)


def _confirmed(suspects: dict, controlled: set) -> tuple[list[str], list[str]]:
    findings, notes = [], []
    for key, seen in suspects.items():
        trials = len({trial for trial, _ in seen})
        if key not in controlled:
            notes.append(
                f"not refused: {seen[0][1]}; no control call (fresh inputs in a repeated "
                "run's position) timed that launch, so the gain may be the position's"
            )
        elif trials >= CONFIRMATIONS:
            findings.append(f"{seen[0][1]}; so in {trials} trials")
        else:
            notes.append(
                f"not refused: {seen[0][1]}; in {trials} trial(s) only, fewer than the "
                f"{CONFIRMATIONS} the rule needs (one slow first run is noise)"
            )
    return findings, notes


def _describe(
    trial: int, run: str, i: int, launch: list, first: float, again: float, best: float
) -> str:
    name, grid = launch[0], launch[1]
    grid = tuple(grid) if grid else "?"
    fastest = "" if best == first else f" (at least {best:.3f} ms on every fresh input)"
    return (
        f"trial {trial}, {run} run: launch {i + 1} ({name}, grid {grid}), same arguments, other "
        f"work inside the kernel: {first:.3f} ms the first time{fastest}, {again:.3f} ms on "
        "the repeated inputs (device time, CUDA events)"
    )
