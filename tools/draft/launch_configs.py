"""Draft-time choice among Inductor's launch configs on a GPU, in repeated rounds (issue 15).

Inductor autotunes a kernel's candidate launch configs (`XBLOCK`, `R0_BLOCK`, `num_warps`...)
when it compiles, and the drafter writes the one it picked at the kernel's launch. The draft job
shares its GPU with other jobs, so that pick is one timing under someone else's load: on the
H200 (session 8) the same streaming kernel shape took `XBLOCK=512, num_warps=8` in level1/20,
21, 25, 27, 28, 30 (3.29-3.39 ms) and `XBLOCK=1024, num_warps=4` in 22, 31, 32 (3.02-3.03 ms).

Here every other config of each kernel with several is written into the draft (the launch's
keywords, `tools.compile.tune.rewrite`), the draft's whole forward is timed with it, and again in a
second round for the draft as it was and the three fastest variants, each keeping its best time.
A kernel takes the config whose forward is at least `MIN_GAIN` faster than the draft's.
Only launch parameters Inductor itself offered for that kernel change, and the draft is
verified afterwards like any candidate. Variants share the draft's `ModelNew` (its weights):
only the module's `call` and kernels differ.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import tempfile
import types
from collections.abc import Callable
from typing import Any

from tools.checks.timing import Timer
from tools.compile.tune import Knob, rewrite
from tools.core import pyast
from tools.draft import choice_clock
from tools.draft.loading import draft_model
from tools.sandboxing import work_clock

MIN_GAIN = 0.03
"""A kernel keeps its config unless another makes the forward at least this much faster."""
ROUNDS = 2
MAX_VARIANTS = 12
"""Configs timed per draft at most (each costs a compile of one kernel and a few forwards)."""
BUDGET_S = 45.0
"""Seconds of first-round timing per draft after which no further variant is timed (a draft
with many kernels, or with autotuned convolutions that autotune again in every variant's
module, would otherwise add minutes to a draft)."""


class Run:
    """A zero-argument call for the timer, with what it times: `label` for a person, `info`
    (the variant's values) for a scripted timer in tests."""

    def __init__(self, fn: Callable[[], Any], label: str, info: dict | None = None) -> None:
        self.fn, self.label, self.info = fn, label, info or {}

    def __call__(self) -> Any:
        return self.fn()


RunTimer = Callable[[Run], float]
"""How the pickers time a `Run`: `Timer.fastest_ms` (`tools.checks.timing`, the library's one
timer, in its draft mode) on a GPU, a scripted timer in tests."""


def config_values(config: Any, constexprs: list[str]) -> dict[str, Any]:
    """A triton.Config as the launch's keywords: its constexprs the kernel takes, warps, stages."""
    values = {k: v for k, v in config.kwargs.items() if k in constexprs}
    values["num_warps"] = config.num_warps
    values["num_stages"] = config.num_stages
    return values


def with_config(source: str, kernel: str, values: dict[str, Any]) -> str:
    """`source` with every `kernel[grid](...)` launch's literal keywords set to `values`."""
    changes: dict[Knob, Any] = {}
    for node in ast.walk(pyast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == kernel
        ):
            for kw in node.keywords:
                v = kw.value
                if kw.arg in values and isinstance(v, ast.Constant) and v.value != values[kw.arg]:
                    changes[Knob(kw.arg, v.value, v.lineno, v.col_offset, v.end_col_offset)] = (
                        values[kw.arg]
                    )
    return rewrite(source, changes) if changes else source


def pick_configs(
    source: str,
    candidates: dict[str, list[dict[str, Any]]],
    current: dict[str, dict[str, Any]],
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    *,
    timer: RunTimer = Timer.fastest_ms,
) -> tuple[str, list[str]]:
    """`source` with each kernel's fastest config among `candidates[kernel]` (launch keyword
    values) written in where it beats `current[kernel]` by MIN_GAIN; a note per kernel timed.
    The forward of the draft and of each variant timed: `_time_variants`."""
    variants = [
        (name, values)
        for name, configs in candidates.items()
        for values in configs
        if len(configs) > 1 and values != current.get(name)
    ][:MAX_VARIANTS]
    if not variants:
        return source, []
    times, unused = _time_variants(source, variants, init_inputs, inputs, device, timer)
    if times[0] is None:
        return source, ["launch configs not compared: the draft's forward failed to time"]
    base_ms = float(times[0])
    best: dict[str, tuple[float, dict[str, Any]]] = {}
    for (name, values), ms in zip(variants, times[1:], strict=True):
        if ms is not None and ms <= base_ms * (1 - MIN_GAIN) and ms < best.get(name, (base_ms,))[0]:
            best[name] = (ms, values)
    notes = []
    if unused:
        notes.append(
            f"{unused} launch config(s) not timed: the draft's {BUDGET_S:.0f} s for it was spent"
        )
    for name in dict.fromkeys(n for n, _ in variants):
        if name in best:
            ms, values = best[name]
            source = with_config(source, name, values)
            notes.append(
                f"{name}: {_show(values)} picked on the GPU at draft time (forward {ms:.3f} ms "
                f"against {base_ms:.3f} ms with {_show(current[name])})"
            )
        else:
            notes.append(
                f"{name}: {_show(current[name])} kept at draft time (forward {base_ms:.3f} ms, "
                f"no other config of Inductor's {MIN_GAIN:.0%} faster)"
            )
    return source, notes


def _time_variants(
    source: str,
    variants: list[tuple[str, dict[str, Any]]],
    init_inputs: list[Any],
    inputs: list[Any],
    device: str,
    timer: RunTimer,
) -> tuple[list[float | None], int]:
    """The forward of the draft as written, then of each variant (one kernel's config
    changed; its autotuned kernels given the draft's picks), timed on one model within
    `BUDGET_S`; the draft and the 3 fastest variants timed again in later rounds, each keeping
    its best. Returns (milliseconds, the draft's first; None where it did not run or was not
    timed, the variants left untimed by the budget). Past a draft that failed, no rounds."""
    import torch

    with tempfile.TemporaryDirectory(prefix="launch_configs_") as workdir:
        base = load_module(source, workdir, "draft_base", share=True)
        model = draft_model(base, init_inputs, device)

        def runner(module: types.ModuleType, label: str) -> Run:
            forward = types.MethodType(module.ModelNew.forward, model)  # the variant's call()

            def run() -> Any:
                with torch.no_grad():
                    return forward(*inputs)

            return Run(run, label)

        runs = [runner(base, "as drafted")]
        modules = [base]
        for i, (name, values) in enumerate(variants):
            src = with_config(source, name, values)
            modules.append(load_module(src, workdir, f"draft_variant_{i}", share=True))
            runs.append(runner(modules[-1], f"{name} {values}"))
        times: list[float | None] = []
        start, unused = work_clock.now(), 0
        for i, run in enumerate(runs):
            if i and (work_clock.now() - start > BUDGET_S or choice_clock.spent()):  # bounded
                times.append(None)
                unused += 1
                continue
            if i:
                share_autotuning(base, modules[i])
            try:
                times.append(timer(run))
            except Exception:  # a config that does not compile or run: not a candidate
                times.append(None)
        if times[0] is None:
            return times, unused
        for _ in range(ROUNDS - 1):  # the draft and the 3 fastest variants again, best kept
            if choice_clock.spent():
                break
            timed = [i for i in range(1, len(runs)) if times[i] is not None]
            again = [0] + sorted(timed, key=lambda i: times[i])[:3]  # type: ignore[arg-type,return-value]
            for i in again:
                times[i] = min(times[i], timer(runs[i]))  # type: ignore[type-var]
    return times, unused


def share_autotuning(base: types.ModuleType, variant: types.ModuleType) -> int:
    """Give `variant`'s autotuned kernels (`triton.autotune`: the convolution library's tiles)
    the configs `base`'s same kernels picked, so a variant's timing does not autotune every
    convolution shape again: a variant changes only Inductor kernels' launch keywords, and each
    variant module has its own autotuners (a deep network's convolutions were autotuned once a
    variant, inside the 45 s of `BUDGET_S`). Kernels are matched by name, source and configs.
    Returns how many autotuners got configs."""
    from triton.runtime.autotuner import Autotuner

    shared = 0
    for name, tuned in vars(base).items():
        other = getattr(variant, name, None)
        if not (isinstance(tuned, Autotuner) and isinstance(other, Autotuner)) or not tuned.cache:
            continue
        if getattr(tuned.fn, "src", None) != getattr(other.fn, "src", None) or [
            str(c) for c in tuned.configs
        ] != [str(c) for c in other.configs]:
            continue
        for key, config in tuned.cache.items():
            other.cache.setdefault(key, config)
        shared += 1
    return shared


def run_forward(module: types.ModuleType, init_inputs: list, inputs: list, device: str) -> None:
    """Build the module's `ModelNew` (seed 0, at the job's precision: `draft_model`) on `device`
    and run its forward once on `inputs`: how the draft-time pickers reach each call site with
    its real operands."""
    import torch

    model = draft_model(module, init_inputs, device)
    with torch.no_grad():
        model(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def load_module(source: str, workdir: str, name: str, *, share: bool = False) -> types.ModuleType:
    """`source` imported as module `name` from a file in `workdir` (@triton.jit reads it back);
    `share`: its kernels shared with the modules loaded that way before it (`share_kernels`: the
    draft-time pickers of a draft job)."""
    path = os.path.join(workdir, f"{name}.py")  # a real file: @triton.jit reads it back
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if share:
        share_kernels(module)
    return module


SHARE_KERNELS = True
"""Whether `load_module(..., share=True)` gives a module the kernel objects of earlier such
modules of this process that are the same kernel (issue 33). A draft job loads the draft as a module of its own for
each draft-time choice: the convolution picks, the GEMM tiles, the launch configs' draft and
each of their variants (which change only launch keywords), the epilogue check, the sized
path. Each module's `@triton.jit` kernels are new objects, each compiled (or loaded from
Triton's disk cache) on its first launch, and each module's `triton.autotune` objects tune
every convolution shape again: for a network of K kernels, K x (the modules) compiles and as
many autotuning passes. Shared, each kernel compiles once a draft job and each convolution
shape is tuned once. False: every module its own (`benchmarks/level3_draft_time.py` counts
both). The pickers' modules share; other callers (tests that build modules to compare) get
modules of their own unless they ask."""
_SHARED: dict[tuple, Any] = {}


def clear_shared_kernels() -> None:
    """Forget the kernels `load_module` shares (the next module's are kept as they come)."""
    _SHARED.clear()


def is_kernel(value: Any) -> bool:
    """A `@triton.jit` function (not the interpreter's) or a `triton.autotune` object."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    return isinstance(value, (JITFunction, Autotuner))


def share_kernels(module: types.ModuleType) -> int:
    """Bind each kernel of `module` to the object an earlier module holds under the same name
    for the same kernel (`_kernel_key`: Triton's cache key, which covers the source, its line
    and the kernels it calls, plus the values of the globals it reads; for an autotuner also
    its configs, key, pruning and hooks). The host code reads kernels from the module's globals
    at call time, so its launches then use the earlier object, compiled and tuned already.
    Returns how many were shared."""
    if not SHARE_KERNELS:
        return 0
    shared = 0
    for name, value in list(vars(module).items()):
        if not is_kernel(value):
            continue
        try:
            key = _kernel_key(value)
        except Exception:  # noqa: BLE001 - a kernel not keyed is a kernel not shared
            key = None
        if key is None:
            continue
        earlier = _SHARED.setdefault((name, *key), value)
        if earlier is not value:
            setattr(module, name, earlier)
            shared += 1
    return shared


def _kernel_key(value: Any) -> tuple | None:
    """What makes two kernel objects the same kernel, or None where that is not known."""
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    if isinstance(value, JITFunction):
        key = value.cache_key  # computes used_global_vals too
        values = []
        for (name, _), (val, _) in sorted(value.used_global_vals.items(), key=lambda i: i[0][0]):
            one = _value_key(val)
            if one is None:
                return None
            values.append((name, one))
        return ("jit", key, tuple(values))
    if isinstance(value, Autotuner):
        inner = _kernel_key(value.fn)
        if inner is None:
            return None
        parts: list[Any] = ["autotune", inner, tuple(str(c) for c in value.configs)]
        parts += [tuple(value.keys), tuple(value.arg_names)]
        for attr in ("reset_to_zero", "restore_value", "num_warmups", "num_reps"):
            parts.append(repr(getattr(value, attr, None)))
        parts.append(repr(getattr(value, "use_cuda_graph", None)))
        for attr in ("early_config_prune", "perf_model", "configs_top_k"):
            parts.append(_value_key(getattr(value, attr, None)))
        for attr in ("pre_hook", "post_hook"):
            if getattr(value, f"user_defined_{attr}", True):
                parts.append(_value_key(getattr(value, attr, None)))
        return None if any(p is None for p in parts) else tuple(parts)
    return None


def _value_key(value: Any, depth: int = 0) -> Any:
    """A comparable stand-in for a global a kernel or an autotuner's hook reads: plain values as
    themselves, modules by name, plain functions by their code and the globals they read;
    None (not known) for anything else."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("value", repr(value))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if is_kernel(value):
        return ("kernel", _kernel_key(value))
    if isinstance(value, types.FunctionType) and depth < 3 and not value.__closure__:
        names: list[str] = []
        code = _code_key(value.__code__, names)
        reads = []
        for name in dict.fromkeys(names):
            if name in value.__globals__:
                one = _value_key(value.__globals__[name], depth + 1)
                if one is None:
                    return None
                reads.append((name, one))
        return ("function", code, tuple(reads))
    return None


def _code_key(code: types.CodeType, names: list[str]) -> tuple:
    """A code object as comparable data (nested code, comprehensions included, by content, not
    address); the names it and its nested code read are added to `names`."""
    names += code.co_names
    consts = tuple(
        _code_key(c, names) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts
    )
    return (code.co_code, consts, code.co_names)


def _show(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
