"""The drafter's entry points: `draft_candidate` (problem source in, `DraftResult` out), the
sandbox job `draft_job`, and the command line (`python -m tools.draft`). Around one draft
(`tools.draft.steps.one_draft`): the static fallback, the sized path's second draft and the
launch configs timed once, within the draft's time (`SIZED_PATH_END_S`). Runs in a draft job
or the command line's process, never in the agent's."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import tempfile
import threading
from typing import Any

from tools.core.errors import ProblemError, ShimError
from tools.draft import choice_clock
from tools.draft.capture import first_line
from tools.draft.launch_picks import Candidates, draft_time_choice, renamed, timed_once
from tools.draft.loading import LoadedProblem, load_problem
from tools.draft.result import DraftResult
from tools.draft.settings import SETTINGS
from tools.draft.steps import one_draft
from tools.draft.support import check_torch_support
from tools.sandboxing import work_clock


def draft_candidate(
    problem_source: str, *, device: str = "cpu", sizes: str = "dynamic", settings: str = "default"
) -> DraftResult:
    """Draft a candidate for a KernelBench problem by rewriting Inductor's generated Triton.

    `device="cpu"` needs no GPU and gives a candidate that runs under `TRITON_INTERPRET=1`;
    `device="cuda"` runs Inductor's native CUDA path (autotuned block sizes and templates).
    `sizes="dynamic"` (default) drafts with symbolic sizes, so the candidate reads sizes, strides
    and Python-number attributes (`self.eps`) from what it gets at run time, and falls back to a
    static draft (a note says why) when that fails; `sizes="static"` bakes the problem's sizes in;
    `sizes="auto"` is static for a network and dynamic otherwise (`_auto_sizes`).
    `settings`: Inductor settings to draft with (`SETTINGS`: split/persistent reductions,
    coordinate descent, max-autotune for pointwise and reductions).
    Raises `ProblemError` for a problem that does not load, `ShimError` for a torch whose
    internals do not match, `DraftUnsupportedError` for generated code the rewriter cannot map.
    """
    import torch

    if device not in ("cpu", "cuda"):
        raise ProblemError(f"device must be 'cpu' or 'cuda', not {device!r}")
    if sizes not in ("dynamic", "static", "auto"):
        raise ProblemError(f"sizes must be 'dynamic', 'static' or 'auto', not {sizes!r}")
    if settings not in SETTINGS:
        raise ProblemError(
            f"unknown Inductor settings {settings!r}; choose one of {', '.join(SETTINGS)}"
        )
    notes = check_torch_support()
    if device == "cuda" and not torch.cuda.is_available():
        raise ProblemError("device='cuda' asked for, but torch sees no CUDA device")
    problem = load_problem(problem_source, device)
    if sizes == "auto":
        sizes = _auto_sizes(problem, notes)
    if settings != "default":
        notes.append(f"Inductor settings {settings!r}: {SETTINGS[settings][3]}")
        if SETTINGS[settings][2]:
            sizes = "static"
    started = work_clock.now()
    choice_clock.start()
    if sizes == "dynamic":
        # on the GPU, launch configs are timed once, for the path the candidate runs
        deferred: list[Candidates] | None = (
            [] if device == "cuda" and settings == "default" else None
        )
        try:
            result = one_draft(problem, device, True, settings, notes, deferred=deferred)
        except ProblemError:
            raise
        except Exception as exc:  # a rewriter limit, or internals of an untested torch
            notes.append(
                "sizes fixed at the problem's: the dynamic-shape draft failed after "
                f"{work_clock.now() - started:.1f} s ({type(exc).__name__}: {first_line(exc)})"
            )
        else:
            if deferred is not None and _wants_sized_path(result):
                spent = work_clock.now() - started
                if choice_clock.is_network():
                    result.notes.append(
                        "sized path not tried: a network's draft (tools.draft.choice_clock) "
                        "takes none (a second Inductor compile of every layer)"
                    )
                elif spent <= SIZED_PATH_MAX_S:
                    end = started + SIZED_PATH_END_S
                    result = _with_sized_path(result, problem, end, deferred)
                else:
                    result.notes.append(
                        f"sized path not tried: the draft took {spent:.0f} s already "
                        f"(more than {SIZED_PATH_MAX_S:.0f} s)"
                    )
            if deferred:
                result = _with_configs_once(result, problem, deferred, started + SIZED_PATH_END_S)
            return result
    return one_draft(problem, device, False, settings, notes)


def _auto_sizes(problem: LoadedProblem, notes: list[str]) -> str:
    """`sizes="auto"` (the agent's drafts, unless it verifies other sizes: `--generalize`):
    dynamic for an operator, static for a network (more than `SYMBOLIC_PARAMETERS_MAX`
    parameters and buffers, whose shapes a dynamic draft fixes anyway). A network's dynamic
    draft spends most of its Inductor time in the shape environment's symbolic algebra for its
    inputs' sizes (reduced copies on the CPU, same load: ResNet-101 54 -> 21 s, DenseNet-121
    138 -> 24 s, `benchmarks/results/cpu/level3_sizes`; sympy on top of the profile), a network takes no sized path (`choice_clock`), and KernelBench's
    networks are verified and timed at their own sizes: the static draft is what runs there."""
    from tools.draft.capture import SYMBOLIC_PARAMETERS_MAX, count_state_tensors

    tensors = count_state_tensors(problem.model)
    if tensors <= SYMBOLIC_PARAMETERS_MAX:
        return "dynamic"
    notes.append(
        f"sizes fixed at the problem's: a network's draft ({tensors} parameters and buffers, "
        f"more than {SYMBOLIC_PARAMETERS_MAX}) is static, its Inductor compile a fraction of a "
        "dynamic one's; `--generalize` drafts it with symbolic sizes"
    )
    return "static"


SIZED_PATH_MAX_S = 360.0
"""Seconds of a draft after which the sized path's second draft is not started: it costs an
Inductor compile, launch configs and a timing (a minute or two). At 180 s (session 11), four of
twelve level-2 convolution drafts on the H200 were past it (189-334 s, eight jobs sharing the
GPU) and never tried it (session 12)."""
SIZED_PATH_END_S = 540.0
"""Seconds of a draft at which an unfinished second draft is abandoned and the first one
returned: a draft job ends at its limit (600 s, `agent.drafters.CompilerDrafter`) with nothing,
so the sized path must not take the draft already made with it."""


class _OutOfTime(BaseException):
    """Raised by `_time_limit`'s alarm. A BaseException, so that the `except Exception` of a speed
    choice inside the second draft does not take it for that choice's own failure."""


@contextlib.contextmanager
def _time_limit(deadline: float):
    """Raise `_OutOfTime` in this thread at `deadline` (work_clock.now()), by SIGALRM; no limit
    for an infinite deadline or outside the main thread (signals go there only); raised at once
    where the deadline has passed already."""
    left = deadline - work_clock.now()
    if left <= 0:
        raise _OutOfTime
    # setitimer takes no infinity (OverflowError), so `_with_sized_path`'s default needs this
    if left == float("inf") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum, frame):
        left = deadline - work_clock.now()
        if left > 0:  # the job was stopped meanwhile (a pausable draft): not its working time
            signal.setitimer(signal.ITIMER_REAL, left)
            return
        raise _OutOfTime

    before = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _wants_sized_path(result: DraftResult) -> bool:
    """Whether to draft the problem's own sizes too (tools/draft/sized.py): not where this
    project's GEMM template carries the time (its kernel reads sizes either way, and its tiles
    would be timed again), nor where a convolution's epilogue was fused. A convolution draft's
    static twin copies its convolution picks (`conv_from`): what differs is Inductor's kernels
    around them (session 11's profiles: level 2's pointwise and reduction kernels after the
    convolution at 0.5-1.3 TB/s, 15-46% of their candidates' time)."""
    return (
        "_gemm_kernel" not in result.kernels
        and not result.mixed
        and not _fuses_an_epilogue(result.source)
    )


def _fuses_an_epilogue(source: str) -> bool:
    """Whether a `triton_convolution` call of the draft has an `EPILOGUE=` keyword. The calls,
    not the text: the convolution library copied into every convolution draft declares
    `EPILOGUE=None` itself (a text search skipped the sized path for all of them, session 12)."""
    from tools.compile.tune import conv_sites

    return any(k.arg == "EPILOGUE" for call in conv_sites(source).values() for k in call.keywords)


def _with_sized_path(
    result: DraftResult,
    problem: LoadedProblem,
    deadline: float = float("inf"),
    deferred: list[Candidates] | None = None,
) -> DraftResult:
    """`result` with a first path through Inductor's kernels for the problem's own sizes, where
    that is faster on the GPU (`tools.draft.sized.pick_sized_path`); as it was otherwise, with a
    note either way. Past `deadline` (work_clock.now()) the second draft is abandoned and
    `result` returned as it was. `deferred` (the dynamic draft's launch-config candidates, not
    timed yet): the static draft's are not timed either, and replace them where the sized path
    is taken (`tools.draft.launch_picks`)."""
    from tools.draft.sized import SUFFIX, pick_sized_path

    conv_from = result.source if "triton_convolution(" in result.source else None
    notes: list[str] = []
    started = work_clock.now()
    try:
        with _time_limit(deadline):
            try:
                found: list[Candidates] | None = None if deferred is None else []
                static = one_draft(problem, "cuda", False, "default", [], conv_from, found)
            except Exception as exc:  # noqa: BLE001 - a speed choice: the dynamic draft stands
                result.notes.append(
                    f"sized path not built: the static draft failed ({first_line(exc)})"
                )
                return result
            source = draft_time_choice(
                lambda src, init, inputs, dev: pick_sized_path(
                    src, static.source, init, inputs, dev
                ),
                "sized path",
                result.source,
                problem,
                notes,
            )
    except _OutOfTime:
        result.notes.append(
            f"sized path abandoned after {work_clock.now() - started:.0f} s: the draft reached "
            f"its {SIZED_PATH_END_S:.0f} s for it (tools.draft.job.SIZED_PATH_END_S)"
        )
        return result
    # where the second draft's time went (its own phases, then the whole sized path with its
    # timing), for the bench records' phases (agent/bench/records.py `phase_seconds`)
    notes += [
        f"sized path: {n}" for n in static.notes if " draft took " in n or " draft stopped " in n
    ]
    notes.append(f"sized path took {work_clock.now() - started:.1f} s")
    if source == result.source:
        result.notes.extend(notes)
        return result
    if deferred is not None and found:
        deferred[:] = [renamed(found[0], source, SUFFIX)]
    sized_kernels = [k + SUFFIX if k + SUFFIX in source else k for k in static.kernels]
    picked = [n for n in static.notes if "picked on the GPU at draft time" in n]
    return dataclasses.replace(
        result,
        source=source,
        kernels=list(dict.fromkeys(result.kernels + sized_kernels)),
        notes=result.notes + notes + [f"sized path: {n}" for n in picked],
    )


def _with_configs_once(
    result: DraftResult, problem: LoadedProblem, deferred: list[Candidates], deadline: float
) -> DraftResult:
    """`result` with its launch configs timed (`deferred[0]`: the candidates of the path the
    candidate runs at the problem's sizes); as it was past `deadline`, with a note."""
    notes: list[str] = []
    try:
        with _time_limit(deadline):
            source = timed_once(result.source, problem, deferred[0], notes)
    except _OutOfTime:
        result.notes.append(
            f"launch configs not timed: the draft reached its {SIZED_PATH_END_S:.0f} s for them"
        )
        return result
    return dataclasses.replace(result, source=source, notes=result.notes + notes)


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.draft PROBLEM.py [--device cuda]`: print the candidate."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("problem")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument(
        "--sizes",
        default="auto",
        choices=["auto", "dynamic", "static"],
        help="auto (the agent's): static for a network, dynamic for an operator",
    )
    parser.add_argument("--settings", default="default", choices=sorted(SETTINGS))
    parser.add_argument("--json", action="store_true", help="print the DraftResult as JSON")
    args = parser.parse_args(argv)
    with open(args.problem) as f:
        result = draft_candidate(
            f.read(), device=args.device, sizes=args.sizes, settings=args.settings
        )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(result.source)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


def draft_job(
    problem_source: str,
    problem_path: str,
    *,
    device: str = "cpu",
    sizes: str = "auto",
    settings: str = "default",
) -> dict[str, Any]:
    """Sandbox entry point (`agent.drafters.CompilerDrafter`): plain data back, errors as text.
    `sizes`: "auto" (static for a network, `_auto_sizes`), or "dynamic" where the run verifies
    other sizes too (`--generalize`)."""
    if device == "cuda":  # a compile that hangs is a variant not taken, not a stalled bench
        from tools.draft.ptxas_limit import limit_ptxas

        limit_ptxas(tempfile.mkdtemp(prefix="ptxas_limit_"))
    try:
        result = draft_candidate(problem_source, device=device, sizes=sizes, settings=settings)
    except (ShimError, ProblemError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:  # Inductor failing on an unusual model is a failed draft, not a crash
        return {"error": f"Inductor could not draft {problem_path}: {type(exc).__name__}: {exc}"}
    return {
        "source": result.source,
        "mixed": result.mixed,
        "library_calls": list(result.library_calls),
        "kernels": list(result.kernels),
        "notes": list(result.notes),
        "dynamic": result.dynamic,
        "fixed_sizes": list(result.fixed_sizes),
        "precision": result.precision,
        "settings": result.settings,
    }
