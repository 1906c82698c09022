"""The drafter's entry points: `draft_candidate` (problem source in, `DraftResult` out), the
sandbox job `draft_job`, and the command line (`python -m tools.draft`)."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import tempfile
import threading
import time
from typing import Any

from tools.checks.precision import full_fp32
from tools.compile.tune import precisions
from tools.core.errors import ProblemError, ShimError
from tools.draft.assemble import (
    assemble,
    describe_sizes,
    model_new_source,
    output_structure,
    reassigned_attributes,
    tensor_attributes,
    with_conv_source,
    with_source_before_call,
)
from tools.draft.attention import attention_as_op  # issue 33 hook
from tools.draft.capture import capture_inductor, first_line, source_expr
from tools.draft.inductor_patches import stand_in_driver_if_needed
from tools.draft.kernels import KernelRewriter, load_kernels, pick_config
from tools.draft.launch_picks import (
    Candidates,
    config_candidates,
    draft_time_choice,
    renamed,
    timed_once,
    with_picked_configs,
)
from tools.draft.loading import (
    LoadedProblem,
    forward_signature,
    load_problem,
    plain_expr,
    plain_sources,
    tensor_sources,
)
from tools.draft.recurrent import RECURRENT_KERNELS, recurrent_layers_as_ops
from tools.draft.result import LIBRARY_CALLS_ALLOWED, DraftResult, DraftUnsupportedError
from tools.draft.rewrite import (
    attention_in_triton,
    convolutions_in_triton,
    recurrent_in_triton,
    returned_count,
    rewrite_host,
)
from tools.draft.settings import SETTINGS
from tools.draft.support import check_torch_support


def _state_attribute(problem: LoadedProblem, expr: str, value: Any) -> str | None:
    """`expr` (`self.hidden`) when it names a plain tensor attribute of the model now holding a
    tensor of `value`'s shape and dtype; None otherwise."""
    import torch

    names = expr.split(".")
    if names[0] != "self" or not all(n.isidentifier() for n in names[1:]):
        return None
    obj: Any = problem.model
    for name in names[1:]:
        if isinstance(obj, torch.nn.Module) and name in obj._modules:
            obj = obj._modules[name]
        else:
            obj = vars(obj).get(name) if hasattr(obj, "__dict__") else None
        if obj is None:
            return None
    if not isinstance(obj, torch.Tensor) or isinstance(obj, torch.nn.Parameter):
        return None
    if tuple(obj.shape) != tuple(value.shape) or obj.dtype != value.dtype:
        return None
    return expr


def draft_candidate(
    problem_source: str, *, device: str = "cpu", sizes: str = "dynamic", settings: str = "default"
) -> DraftResult:
    """Draft a candidate for a KernelBench problem by rewriting Inductor's generated Triton.

    `device="cpu"` needs no GPU and gives a candidate that runs under `TRITON_INTERPRET=1`;
    `device="cuda"` runs Inductor's native CUDA path (autotuned block sizes and templates).
    `sizes="dynamic"` (default) drafts with symbolic sizes, so the candidate reads sizes, strides
    and Python-number attributes (`self.eps`) from what it gets at run time, and falls back to a
    static draft (a note says why) when that fails; `sizes="static"` bakes the problem's sizes in.
    `settings`: Inductor settings to draft with (`SETTINGS`: split/persistent reductions,
    coordinate descent, max-autotune for pointwise and reductions).
    Raises `ProblemError` for a problem that does not load, `ShimError` for a torch whose
    internals do not match, `DraftUnsupportedError` for generated code the rewriter cannot map.
    """
    import torch

    if device not in ("cpu", "cuda"):
        raise ProblemError(f"device must be 'cpu' or 'cuda', not {device!r}")
    if sizes not in ("dynamic", "static"):
        raise ProblemError(f"sizes must be 'dynamic' or 'static', not {sizes!r}")
    if settings not in SETTINGS:
        raise ProblemError(
            f"unknown Inductor settings {settings!r}; choose one of {', '.join(SETTINGS)}"
        )
    notes = check_torch_support()
    if device == "cuda" and not torch.cuda.is_available():
        raise ProblemError("device='cuda' asked for, but torch sees no CUDA device")
    problem = load_problem(problem_source, device)
    if settings != "default":
        notes.append(f"Inductor settings {settings!r}: {SETTINGS[settings][3]}")
        if SETTINGS[settings][2]:
            sizes = "static"
    started = time.monotonic()
    if sizes == "dynamic":
        # on the GPU, launch configs are timed once, for the path the candidate runs
        deferred: list[Candidates] | None = (
            [] if device == "cuda" and settings == "default" else None
        )
        try:
            result = _draft(problem, device, True, settings, notes, deferred=deferred)
        except ProblemError:
            raise
        except Exception as exc:  # a rewriter limit, or internals of an untested torch
            notes.append(
                "sizes fixed at the problem's: the dynamic-shape draft failed after "
                f"{time.monotonic() - started:.1f} s ({type(exc).__name__}: {first_line(exc)})"
            )
        else:
            if deferred is not None and _wants_sized_path(result):
                spent = time.monotonic() - started
                if spent <= SIZED_PATH_MAX_S:
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
    return _draft(problem, device, False, settings, notes)


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
    """Raise `_OutOfTime` in this thread at `deadline` (time.monotonic()), by SIGALRM; no limit
    for an infinite deadline or outside the main thread (signals go there only); raised at once
    where the deadline has passed already."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _OutOfTime
    # setitimer takes no infinity (OverflowError), so `_with_sized_path`'s default needs this
    if left == float("inf") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum, frame):
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
    note either way. Past `deadline` (time.monotonic()) the second draft is abandoned and
    `result` returned as it was. `deferred` (the dynamic draft's launch-config candidates, not
    timed yet): the static draft's are not timed either, and replace them where the sized path
    is taken (`tools.draft.launch_picks`)."""
    from tools.draft.sized import SUFFIX, pick_sized_path

    conv_from = result.source if "triton_convolution(" in result.source else None
    notes: list[str] = []
    started = time.monotonic()
    try:
        with _time_limit(deadline):
            try:
                found: list[Candidates] | None = None if deferred is None else []
                static = _draft(problem, "cuda", False, "default", [], conv_from, found)
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
            f"sized path abandoned after {time.monotonic() - started:.0f} s: the draft reached "
            f"its {SIZED_PATH_END_S:.0f} s for it (tools.draft.job.SIZED_PATH_END_S)"
        )
        return result
    # where the second draft's time went (its own phases, then the whole sized path with its
    # timing), for the bench records' phases (agent/bench/records.py `phase_seconds`)
    notes += [f"sized path: {n}" for n in static.notes if " draft took " in n]
    notes.append(f"sized path took {time.monotonic() - started:.1f} s")
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


def _draft(
    problem: LoadedProblem,
    device: str,
    dynamic: bool,
    settings: str,
    notes_before: list[str],
    conv_from: str | None = None,
    deferred: list[Candidates] | None = None,
) -> DraftResult:
    """One draft. `conv_from`: a draft whose convolution picks are copied, not timed again, and
    no epilogue fused (the sized path's static draft). `deferred`: launch configs not timed on
    the GPU, their candidates appended to it (`draft_candidate` times them once).

    Its steps: the reference's forward and Inductor's capture (`_reference_and_capture`), the
    kernels loaded and rewritten (`_rewritten_kernels`), the graph inputs as expressions of
    forward (`_call_args`), the host code rewritten with the kernel libraries it needs
    (`_kernel_libraries`), the outputs and kept state (`_outputs_and_state`), the notes on
    library calls (`_library_notes`), the candidate assembled (`_assembled`), the launch
    parameters picked on the GPU (`_picked_on_the_gpu`)."""
    import torch

    notes = list(notes_before)
    phases = _Phases()
    forward_args, forward_names = forward_signature(problem)
    vararg = forward_args.vararg.arg if forward_args.vararg else None
    reference, state, capture = _reference_and_capture(problem, device, dynamic, settings, phases)
    kernels, kernel_rewriter = _rewritten_kernels(capture, device, notes)
    call_args, scalars, symbols = _call_args(problem, capture, forward_names, vararg, dynamic)
    first_tensor = next(
        (i for i, v in enumerate(capture.graph_inputs) if isinstance(v, torch.Tensor)), 0
    )
    call, host, n_args = rewrite_host(capture.wrapper, kernels, not dynamic, scalars, first_tensor)
    libraries = _kernel_libraries(call, host, notes)
    if n_args != len(capture.graph_inputs):
        raise DraftUnsupportedError(
            f"Inductor's call takes {n_args} tensors but the graph had {len(capture.graph_inputs)} inputs"
        )
    sizes_doc, fixed = describe_sizes(capture, call_args, forward_names, vararg, symbols, dynamic)
    notes.append(sizes_doc.replace("\n", " "))
    if host.gemms:
        notes.append(
            f"GEMMs ({', '.join(host.gemms)}) use this project's template (tools/kernels/gemm_template.py), "
            "input_precision tf32x3 for fp32 operands (three TF32 products: about fp32 accuracy); "
            "launch parameters at each gemm(...) call, for the tuner"
        )
    output_expr, stores = _outputs_and_state(reference, state, call, notes)
    library_calls = _library_notes(host, kernel_rewriter, device, libraries, notes)
    model_new = model_new_source(problem, forward_args, call_args, output_expr, stores)
    source = _assembled(
        problem,
        device,
        kernels,
        kernel_rewriter,
        call,
        host,
        model_new,
        sizes_doc,
        libraries,
        capture.scan_exponents,
        notes,
    )
    phases.mark("rewriting")
    gpu = (problem, device, kernels, host, libraries[0], conv_from, notes, phases, deferred)
    source = _picked_on_the_gpu(source, *gpu)
    notes.append(phases.note("static" if not dynamic else "dynamic"))
    conv_source, recurrent_source, attention_source = libraries
    return DraftResult(
        source=source,
        mixed=bool(library_calls),
        library_calls=library_calls,
        kernels=list(dict.fromkeys(host.launched))
        + (["_gemm_kernel"] if host.gemms else [])
        + (list(RECURRENT_KERNELS) if recurrent_source else [])
        + (["_attention_kernel"] if attention_source else []),
        notes=notes,
        dynamic=dynamic,
        fixed_sizes=fixed,
        precision=", ".join(dict.fromkeys(precisions(source))) or None,
        settings=settings,
    )


def _reference_and_capture(
    problem: LoadedProblem, device: str, dynamic: bool, settings: str, phases: _Phases
) -> tuple[Any, list[str], Any]:
    """The reference's outputs, the tensor attributes forward reassigns, and Inductor's capture
    of forward (`capture_inductor`). Returns (reference, state, capture)."""
    import torch

    # In full fp32 (tools.checks.precision): Inductor's GEMM/convolution templates read PyTorch's TF32
    # switches when they generate code (cuDNN's is on by default), and a TF32 template in an
    # fp32 candidate fails the judge's full-fp32 reference at KernelBench's sizes.
    before = tensor_attributes(problem.model)
    with torch.no_grad(), full_fp32():
        reference = problem.model(*problem.inputs)
    # issue 33: a forward that keeps state in a plain tensor attribute (`self.hidden = ...`,
    # level3/33): Dynamo returns the new value as an extra output of the graph, after forward's
    # own, and the candidate's forward stores it back the same way
    state = reassigned_attributes(before, problem.model)
    phases.mark("reference forward")
    with full_fp32(), recurrent_layers_as_ops(problem.model):  # issue 33: RNN/LSTM/GRU as ops
        with attention_as_op(problem.module):  # issue 33: SDPA as one op
            capture = capture_inductor(problem, device, dynamic, settings)
    phases.mark("Inductor")
    return reference, state, capture


def _rewritten_kernels(capture: Any, device: str, notes: list[str]) -> tuple[dict, Any]:
    """Inductor's kernels loaded, each with its launch config picked and its source rewritten
    (`KernelRewriter`; interpreter-safe on the CPU). Returns (kernels, the rewriter)."""
    with tempfile.TemporaryDirectory(prefix="inductor_draft_") as workdir:
        with stand_in_driver_if_needed() if device == "cpu" else contextlib.nullcontext():
            kernels = load_kernels(capture.wrapper, capture.module, workdir)
    kernel_rewriter = KernelRewriter(interpreter_safe=(device == "cpu"))
    for kernel in kernels.values():
        kernel.config, how = pick_config(kernel)
        kernel.source = kernel_rewriter.rewrite(kernel)
        blocks = ", ".join(f"{k}={v}" for k, v in kernel.config.kwargs.items())
        notes.append(
            f"{kernel.name}: {blocks or 'no block sizes'}, num_warps={kernel.config.num_warps} ({how})"
        )
    return kernels, kernel_rewriter


def _call_args(
    problem: LoadedProblem,
    capture: Any,
    forward_names: list[str],
    vararg: str | None,
    dynamic: bool,
) -> tuple[list[str], set[int], dict[str, str]]:
    """Each graph input as an expression of the candidate's forward: a forward argument, a
    parameter/buffer/tensor attribute, or (dynamic) a Python number. Returns (the expressions,
    the inputs Inductor took as 0-d tensors, the symbols' expressions)."""
    import torch

    sources = tensor_sources(problem, forward_names, vararg)
    capture.symbol_sources = plain_sources(problem, capture.symbol_sources)
    call_args, scalars, symbols = [], set(), {}
    for i, value in enumerate(capture.graph_inputs):
        source = capture.input_sources[i] if i < len(capture.input_sources) else None
        expr = None
        if isinstance(value, torch.Tensor):
            expr = next((e for t, e in sources if t is value), None)
            if expr is None and source and source.startswith("L['self']") and value.dim():
                # a plain tensor attribute forward reassigns (`self.hidden = ...`, issue 33): the
                # traced forward already replaced the object Dynamo took; the attribute's
                # current value, of the same shape and dtype, is what the candidate reads
                expr = _state_attribute(problem, source_expr(source), value)
            if expr is None and dynamic and value.dim() == 0 and source:
                # a Python number (`self.eps`) Inductor took as 0-d
                expr = plain_expr(problem, source_expr(source))
                scalars.add(i)
        elif isinstance(value, (int, float, torch.SymInt, torch.SymFloat)) and source:
            expr = plain_expr(problem, source_expr(source))  # issue 33: no closures
            symbols[str(value)] = expr
        if expr is None:
            raise DraftUnsupportedError(
                "a graph input is neither a forward argument nor a parameter/buffer/tensor attribute "
                f"of Model (shape {tuple(getattr(value, 'shape', ()))}, reached as {source!r})"
            )
        call_args.append(expr)
    return call_args, scalars, symbols


def _kernel_libraries(call: Any, host: Any, notes: list[str]) -> tuple[str, str, str]:
    """The host's library calls this project runs in Triton instead, each with its note:
    convolutions (issue 15), recurrent layers and attention (issue 33). Returns the sources to
    copy into the candidate (convolution, recurrent, attention; "" where none)."""
    conv_source = convolutions_in_triton(call, host)  # issue 15 hook
    if conv_source:
        from tools.kernels.triton_conv import PRECISION_NOTE

        notes.append(PRECISION_NOTE)
    recurrent_source = recurrent_in_triton(call)  # issue 33 hook
    if recurrent_source:
        from tools.kernels.recurrent_kernels import PRECISION_NOTE as RECURRENT_NOTE

        notes.append(RECURRENT_NOTE)
    attention_source = attention_in_triton(call)  # issue 33 hook
    if attention_source:
        from tools.kernels.attention_kernels import PRECISION_NOTE as ATTENTION_NOTE

        notes.append(ATTENTION_NOTE)
    return conv_source, recurrent_source, attention_source


def _outputs_and_state(
    reference: Any, state: list[str], call: Any, notes: list[str]
) -> tuple[str, list[str]]:
    """How forward's outputs are built from the call's (`output_structure`), and the stores of
    the tensor attributes forward reassigns, after them. Raises DraftUnsupportedError where the
    counts differ (outputs that alias inputs)."""
    counter = [0]
    output_expr = output_structure(reference, counter)
    stores = [f"self.{name} = outputs[{counter[0] + i}]" for i, name in enumerate(state)]
    if counter[0] + len(stores) != returned_count(call):
        raise DraftUnsupportedError(
            f"Model.forward returns {counter[0]} tensors"
            + (f" and reassigns {len(stores)} tensor attributes" if stores else "")
            + f", Inductor's call returns {returned_count(call)} "
            "(outputs that alias inputs are not supported)"
        )
    if stores:
        notes.append("forward's state kept as Model keeps it: " + "; ".join(stores))
    return output_expr, stores


def _library_notes(
    host: Any, kernel_rewriter: Any, device: str, libraries: tuple, notes: list[str]
) -> list[str]:
    """The notes on what the draft keeps outside Triton (libdevice on the CPU, library calls)
    or lacks (no kernel). Returns the library calls forward makes."""
    if kernel_rewriter.libdevice_kept and device == "cpu":
        notes.append(
            "libdevice."
            + ", libdevice.".join(sorted(kernel_rewriter.libdevice_kept))
            + " kept: no interpreter equivalent, so this candidate needs a GPU"
        )
    notes += kernel_rewriter.notes
    library_calls = host.library_calls
    if library_calls:
        disallowed = [c for c in library_calls if c not in LIBRARY_CALLS_ALLOWED]
        notes.append(
            "forward calls library ops: "
            + ", ".join(library_calls)
            + (
                "; not accepted even under allow-library: " + ", ".join(disallowed)
                if disallowed
                else ""
            )
        )
    if not host.launched and not libraries[1] and not libraries[2]:
        notes.append("Inductor emitted no Triton kernel for this problem")
    return library_calls


def _assembled(
    problem: LoadedProblem,
    device: str,
    kernels: dict,
    kernel_rewriter: Any,
    call: Any,
    host: Any,
    model_new: str,
    sizes_doc: str,
    libraries: tuple,
    scan_exponents: int,
    notes: list[str],
) -> str:
    """The candidate's source: the kernels, the host code and `ModelNew` (`assemble`), with the
    kernel libraries' sources, and a selective scan's GEMMs at fp32 accuracy."""
    import torch

    conv_source, recurrent_source, attention_source = libraries
    source = assemble(
        problem,
        torch.__version__,
        device,
        kernels,
        kernel_rewriter,
        call,
        host,
        model_new,
        sizes_doc
        + (
            "\nGEMMs: this project's template, tl.dot input precision tf32x3 for fp32 operands\n"
            "(the `precision=` of each gemm(...) call below says what it uses)."
            if host.gemms
            else ""
        ),
    )
    source = with_conv_source(source, conv_source)  # issue 15 hook
    source = with_source_before_call(source, recurrent_source)  # issue 33 hook
    source = with_source_before_call(source, attention_source)  # issue 33 hook
    if scan_exponents:  # issue 33: a selective scan's GEMMs at fp32 accuracy
        source = _scan_at_fp32_accuracy(source, scan_exponents, notes)
    return source


def _picked_on_the_gpu(
    source: str,
    problem: LoadedProblem,
    device: str,
    kernels: dict,
    host: Any,
    conv_source: str,
    conv_from: str | None,
    notes: list[str],
    phases: _Phases,
    deferred: list[Candidates] | None = None,
) -> str:
    """On a GPU, the launch parameters picked at draft time: the convolutions' (or copied from
    `conv_from`), the GEMM tiles, the kernels' launch configs (their candidates appended to
    `deferred` instead, where given), then the convolutions' fused epilogues. The source as it
    was on the CPU."""
    if conv_source and device == "cuda" and conv_from is not None:
        from tools.draft.sized import copy_conv_keywords

        source = copy_conv_keywords(conv_from, source)
    elif conv_source and device == "cuda":
        source = _with_picked_convs(source, problem, notes)
        phases.mark("convolution picks")
    if host.gemms and device == "cuda":
        source = _with_picked_tiles(source, problem, notes)
        phases.mark("GEMM tiles")
    if device == "cuda" and deferred is not None:
        deferred.append(config_candidates(kernels, host.launched))
    elif device == "cuda":
        source = _with_picked_configs(source, problem, kernels, host.launched, notes)
        phases.mark("launch configs")
    if conv_source and device == "cuda" and conv_from is None:
        source = _with_fused_epilogues(source, problem, notes)
        phases.mark("epilogue fusion")
    return source


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


def _scan_at_fp32_accuracy(source: str, exponents: int, notes: list[str]) -> str:
    """A draft whose exponents of cumulative sums Inductor computed in fp64
    (tools/draft/scan_precision.py) with its GEMMs (and convolutions) at `precision="ieee"`:
    their operands span the exponentials' range, and on the H200 level3/49's draft with tf32x3
    GEMMs still had 69 elements farther from fp64 than PyTorch's fp32 value (8 with ieee)."""
    from tools.compile.tune import full_precision_variant

    notes.append(
        f"{exponents} exp(s) of cumulative sums (a selective scan) computed in fp64 from the fp32 "
        "sums' inputs and rounded to fp32 once: in fp32 their arguments' rounding (~1e-6 of "
        "|x| ~ 20-45) was most of the error (tools/draft/scan_precision.py)"
    )
    full = full_precision_variant(source)
    if full is None:
        return source
    notes.append("GEMMs at precision='ieee' (fp32 products): their operands span exp's range")
    return full


class _Phases:
    """Wall time of a draft's phases, for a note: where a slow draft's minutes went (level2/92's
    draft did not finish in 150 s alone on the H200, session 12, and nothing said why)."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.done: list[tuple[str, float]] = []

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self.done.append((phase, now - self.last))
        self.last = now

    def note(self, what: str) -> str:
        parts = ", ".join(f"{name} {secs:.1f} s" for name, secs in self.done)
        return f"{what} draft took {time.monotonic() - self.start:.1f} s: {parts}"


def _with_picked_convs(source: str, problem: LoadedProblem, notes: list[str]) -> str:
    """Each convolution call's input layout and tl.dot precision (tools.draft.conv_picks)."""
    from tools.draft.conv_picks import pick_conv_variants

    return draft_time_choice(pick_conv_variants, "convolution variants", source, problem, notes)


def _with_fused_epilogues(source: str, problem: LoadedProblem, notes: list[str]) -> str:
    """Each X_SPLIT convolution's pointwise epilogue fused into its store where that is as exact
    and faster (tools.draft.conv_epilogue)."""
    from tools.draft.conv_epilogue import pick_conv_epilogues

    return draft_time_choice(pick_conv_epilogues, "epilogue fusion", source, problem, notes)


def _with_picked_tiles(source: str, problem: LoadedProblem, notes: list[str]) -> str:
    """Each GEMM call's tile (tools.draft.gemm_tiles)."""
    from tools.draft.gemm_tiles import pick_tiles

    return draft_time_choice(pick_tiles, "GEMM tiles", source, problem, notes)


def _with_picked_configs(
    source: str, problem: LoadedProblem, kernels: dict, launched: list[str], notes: list[str]
) -> str:
    """Each Inductor kernel's launch config chosen again (tools.draft.launch_picks)."""
    return with_picked_configs(source, problem, config_candidates(kernels, launched), notes)


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.draft PROBLEM.py [--device cuda]`: print the candidate."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("problem")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", default="dynamic", choices=["dynamic", "static"])
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
    sizes: str = "dynamic",
    settings: str = "default",
) -> dict[str, Any]:
    """Sandbox entry point (`agent.drafters.CompilerDrafter`): plain data back, errors as text."""
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
