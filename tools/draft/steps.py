"""One compiler draft of a loaded problem (`one_draft`), in its steps: the reference's forward
and Inductor's capture, the generated kernels loaded and rewritten, the graph inputs as
expressions of forward, the host code rewritten with the kernel libraries it needs
(convolutions, recurrent layers, attention), the outputs and kept state, the candidate
assembled, and on a GPU the launch parameters picked at draft time. `tools.draft.job` calls
it once, or twice for the sized path. Runs in a draft job (`draft_job`) or the command line's
process, never in the agent's."""

from __future__ import annotations

import contextlib
import tempfile
from typing import Any

from tools.checks.precision import full_fp32
from tools.compile.tune import precisions
from tools.draft import choice_clock
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
from tools.draft.capture import capture_inductor, source_expr
from tools.draft.inductor_patches import stand_in_driver_if_needed
from tools.draft.kernels import KernelRewriter, load_kernels, pick_config
from tools.draft.launch_picks import (
    Candidates,
    config_candidates,
    draft_time_choice,
    with_picked_configs,
)
from tools.draft.loading import (
    LoadedProblem,
    forward_signature,
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
from tools.draft.state import attribute_layouts, returned_state, state_moves
from tools.sandboxing import work_clock


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


def one_draft(
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
    (`_kernel_libraries`), the outputs and kept state (`_outputs_and_state`), the tensor
    attributes put where the graph takes them (`_state_moves`), the notes on
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
    moves = _state_moves(problem, capture, call_args, forward_names, vararg, notes)
    library_calls = _library_notes(host, kernel_rewriter, device, libraries, notes)
    model_new = model_new_source(problem, forward_args, call_args, output_expr, stores, moves)
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
    notes += phases.notes("static" if not dynamic else "dynamic")
    return DraftResult(
        source=source,
        mixed=bool(library_calls),
        library_calls=library_calls,
        kernels=_kernel_names(host, libraries),
        notes=notes,
        dynamic=dynamic,
        fixed_sizes=fixed,
        precision=", ".join(dict.fromkeys(precisions(source))) or None,
        settings=settings,
    )


def _kernel_names(host: Any, libraries: tuple[str, str, str]) -> list[str]:
    """The Triton kernels a draft launches: Inductor's, then the libraries' it copied in."""
    _, recurrent_source, attention_source = libraries
    return (
        list(dict.fromkeys(host.launched))
        + (["_gemm_kernel"] if host.gemms else [])
        + (list(RECURRENT_KERNELS) if recurrent_source else [])
        + (["_attention_kernel"] if attention_source else [])
    )


def _reference_and_capture(
    problem: LoadedProblem, device: str, dynamic: bool, settings: str, phases: _Phases
) -> tuple[Any, dict[str, int | None], Any]:
    """The reference's outputs, the tensor attributes forward reassigns (each with the output
    it holds, if any: `tools.draft.state.returned_state`), and Inductor's capture of forward
    (`capture_inductor`). Returns (reference, state, capture)."""
    import torch

    # In full fp32 (tools.checks.precision): Inductor's GEMM/convolution templates read PyTorch's TF32
    # switches when they generate code (cuDNN's is on by default), and a TF32 template in an
    # fp32 candidate fails the judge's full-fp32 reference at KernelBench's sizes.
    before = tensor_attributes(problem.model)
    with torch.no_grad(), full_fp32():
        reference = problem.model(*problem.inputs)
    # issue 33: a forward that keeps state in a plain tensor attribute (`self.hidden = ...`,
    # level3/33): Dynamo returns the new value as an extra output of the graph, after forward's
    # own (once, where forward returns it too), and the candidate's forward stores it back
    state = returned_state(reference, problem.model, reassigned_attributes(before, problem.model))
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
    reference: Any, state: dict[str, int | None], call: Any, notes: list[str]
) -> tuple[str, list[str]]:
    """How forward's outputs are built from the call's (`output_structure`), and the stores of
    the tensor attributes forward reassigns: from the output an attribute holds, or else from
    the graph's extra outputs after forward's own. Raises DraftUnsupportedError where the
    counts differ (outputs that alias inputs)."""
    counter = [0]
    output_expr = output_structure(reference, counter)
    extra = [name for name, held in state.items() if held is None]
    stores = [
        f"self.{name} = outputs[{counter[0] + extra.index(name) if held is None else held}]"
        for name, held in state.items()
    ]
    if counter[0] + len(extra) != returned_count(call):
        raise DraftUnsupportedError(
            f"Model.forward returns {counter[0]} tensors"
            + (f" and reassigns {len(extra)} other tensor attributes" if extra else "")
            + f", Inductor's call returns {returned_count(call)} "
            "(outputs that alias inputs are not supported)"
        )
    if stores:
        notes.append("forward's state kept as Model keeps it: " + "; ".join(stores))
    return output_expr, stores


def _state_moves(
    problem: LoadedProblem,
    capture: Any,
    call_args: list[str],
    forward_names: list[str],
    vararg: str | None,
    notes: list[str],
) -> list[str]:
    """The lines that put each plain tensor attribute the graph reads on the device the graph
    takes it on, before `call` (`tools.draft.state.state_moves`; issue 33: level3/33's
    `self.hidden`, a CPU tensor on a fresh model, a CUDA one in the graph traced after the
    reference's forward), with a note."""
    arguments = list(forward_names)
    if vararg:
        arguments += [e for e in call_args if e.startswith(f"{vararg}[")]
    moves = state_moves(
        problem.constructed,
        attribute_layouts(problem.model),
        capture.graph_inputs,
        call_args,
        arguments,
    )
    if moves:
        notes.append(
            "tensor attributes put where the kernels take them, as Model's forward leaves them "
            "(a fresh model holds the constructor's; `.to(device)` moves parameters and buffers "
            "only): " + "; ".join(moves)
        )
    return moves


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
    if device == "cuda":
        choice_clock.count(_choice_sites(source, host))
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


def _choice_sites(source: str, host: Any) -> int:
    """How many speed choices a draft makes: its convolution and GEMM call sites and the
    Inductor kernels it launches (`tools.draft.choice_clock`)."""
    from tools.compile.tune import gemm_sites  # GEMM and convolution call sites

    return len(gemm_sites(source)) + len(set(host.launched))


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
    """Working time of a draft's phases (`tools.sandboxing.work_clock`: not the time a pausable
    draft job was stopped for a timing job), for a note: where a slow draft's minutes went
    (level2/92's draft did not finish in 150 s alone on the H200, session 12, and nothing said
    why). The time stopped, where any, is a note of its own (`paused_note`)."""

    def __init__(self) -> None:
        self.start = self.last = work_clock.now()
        self.paused0 = work_clock.paused_s()
        self.done: list[tuple[str, float]] = []

    def mark(self, phase: str) -> None:
        now = work_clock.now()
        self.done.append((phase, now - self.last))
        self.last = now

    def note(self, what: str) -> str:
        parts = ", ".join(f"{name} {secs:.1f} s" for name, secs in self.done)
        return f"{what} draft took {work_clock.now() - self.start:.1f} s: {parts}"

    def paused_note(self, what: str) -> str | None:
        """How long the draft's job was stopped during it (a timing job had the GPU), or None."""
        paused = work_clock.paused_s() - self.paused0
        if paused < 0.05:
            return None
        return f"{what} draft stopped {paused:.1f} s while timing jobs had the GPU (not counted)"

    def notes(self, what: str) -> list[str]:
        """The draft's phase note, and the note of the time it was stopped where it was."""
        stopped = self.paused_note(what)
        return [self.note(what)] + ([stopped] if stopped else [])


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
    from functools import partial

    from tools.compile.tune import HALF_GEMM_TILES, half_precision
    from tools.draft.gemm_tiles import pick_tiles

    if half_precision(source):  # a bf16/fp16 draft: tiles for 2-byte operands
        pick_tiles = partial(pick_tiles, tiles=HALF_GEMM_TILES)
    return draft_time_choice(pick_tiles, "GEMM tiles", source, problem, notes)


def _with_picked_configs(
    source: str, problem: LoadedProblem, kernels: dict, launched: list[str], notes: list[str]
) -> str:
    """Each Inductor kernel's launch config chosen again (tools.draft.launch_picks)."""
    return with_picked_configs(source, problem, config_candidates(kernels, launched), notes)
