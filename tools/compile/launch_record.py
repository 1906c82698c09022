"""Launch recording: `record_launches()` watches `kernel[grid](...)` calls (native `JITFunction`
or the interpreter's `InterpretedFunction`, also behind `@triton.autotune` /
`@triton.heuristics`) and keeps one `LaunchRecord` per launch: the kernel, its Triton signature,
constexpr values and launch options, enough to compile it again (`tools.compile.aot`); on a GPU also
two events around it that give its device time (`note_launch_times`, for `tools.checks.launch_times`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.compile.jit_bridge import as_jit, unwrapped

# CUDAOptions defaults, used when a launch does not say.
DEFAULT_NUM_WARPS = 4


DEFAULT_NUM_STAGES = 3


# Launch options other than num_warps/num_stages that change the compiled code, with the
# defaults that need not be recorded.
_PASSED_OPTIONS = {
    "num_ctas": 1,
    "maxnreg": None,
    "enable_fp_fusion": None,
    "launch_cooperative_grid": False,
    "launch_pdl": False,
}


@dataclass(kw_only=True)
class LaunchRecord:
    """One observed `kernel[grid](...)` launch, enough to compile that kernel again."""

    name: str
    """The kernel function's name."""
    fn: Any = field(default=None, repr=False, compare=False)
    """The `JITFunction` or `InterpretedFunction`; not serialised."""
    signature: dict[str, str] = field(default_factory=dict)
    """Argument name -> Triton type: `*fp32`, `i32`, `i64`, `fp32`, `u1`, `constexpr`, ..."""
    constexprs: dict[str, Any] = field(default_factory=dict)
    """Values of the arguments typed `constexpr` (annotated, or specialised like `1` and `None`)."""
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int = DEFAULT_NUM_STAGES
    grid: tuple[int, ...] | None = None
    """The launch grid, resolved when it was a callable; None when it could not be."""
    file: str | None = None
    first_line: int | None = None
    """1-based line of the kernel's `def` in `file`."""
    aligned: list[str] = field(default_factory=list)
    """Arguments the runtime specialises as multiples of 16 (16-byte aligned pointers, ints)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Other launch options that change the code: num_ctas, maxnreg, enable_fp_fusion, ..."""
    autotuning: bool = False
    """True for launches made by `@triton.autotune` while it benchmarks configs."""
    shapes: dict[str, list[int]] = field(default_factory=dict)
    """Shapes of the tensor arguments (the launch trace: `trace_entry`)."""
    scalars: dict[str, Any] = field(default_factory=dict)
    """Values of the plain number arguments that are not constexprs (the launch trace)."""
    events: Any = field(default=None, repr=False, compare=False)
    """(start, end): timing events recorded on the current stream just before and after the
    launch (`record_launches(device="cuda")`), None when not timed; not serialised."""

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if f.name not in ("fn", "events")
        }


# ---------------------------------------------------------------------------------------------
# Launch recording


_AUTOTUNING: contextvars.ContextVar[bool] = contextvars.ContextVar("_AUTOTUNING", default=False)


@contextlib.contextmanager
def record_launches(
    device: str | None = None,
    event: Callable[[], Any] | None = None,
    hold: DeviceHold | None = None,
) -> Iterator[list[LaunchRecord]]:
    """Record every Triton kernel launch made inside the block.

    Patches `JITFunction.run` and `InterpretedFunction.run` (what `kernel[grid](...)` calls,
    directly or through an autotuner/heuristics wrapper), records the launch, then calls the
    original. A launch is recorded before it runs, so a kernel that fails still has its record.
    Recording never raises: a launch whose arguments cannot be read is left to fail on its own.

    On a GPU, `@triton.autotune` benchmark launches are recorded too, with `autotuning=True`.
    Under the interpreter, where benchmarking cannot run, the autotuner is told every config
    takes the same time, so it runs its first config instead of failing.

    With `device="cuda"` (or an `event` type: a stand-in in tests), each recorded launch other
    than autotuning's benchmarks is also timed: an event recorded on the current stream (the
    one Triton launches on) just before Triton's `run` and one just after, into the record's
    `events`; nothing waits for them (`note_launch_times` reads them after the caller's
    synchronize), and the kernel never receives them. On a GPU (or with a `hold`: a stand-in
    in tests) the stream is first held busy (`DeviceHold`) for longer than the host takes to
    enqueue the launch and its two events, so the window is the kernel's device time, not the
    host's launch path; a launch the hold did not cover is left untimed.
    """
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    records: list[LaunchRecord] = []
    originals = [
        (JITFunction, "run", JITFunction.__dict__["run"]),
        (InterpretedFunction, "run", InterpretedFunction.__dict__["run"]),
        (Autotuner, "_bench", Autotuner.__dict__["_bench"]),
    ]

    if event is None and device == "cuda":
        import torch

        event = functools.partial(torch.cuda.Event, enable_timing=True)
        hold = hold or DeviceHold(_cuda_sleep)

    def flagging_bench(original):
        @functools.wraps(original)
        def _bench(self, *args, **kwargs):
            if _is_interpreted(self):
                # Interpreter timings mean nothing and benchmarking needs a GPU driver: call
                # every config equally fast, so the autotuner runs its first (pruned) config.
                return [0.0, 0.0, 0.0]
            token = _AUTOTUNING.set(True)
            try:
                return original(self, *args, **kwargs)
            finally:
                _AUTOTUNING.reset(token)

        return _bench

    JITFunction.run = _recording_run(originals[0][2], records, event, hold)
    InterpretedFunction.run = _recording_run(originals[1][2], records, event, hold)
    Autotuner._bench = flagging_bench(originals[2][2])
    try:
        yield records
    finally:
        for cls, name, original in originals:
            setattr(cls, name, original)


HOLD_US = 100.0
"""The first hold of a timed launch (`DeviceHold`): on the H200 (session 17,
benchmarks/results/gpu/2026-12-02-s17/call1) an event window around a tiny kernel on an idle
stream had a median of 50 us, all of it the host's launch path; under 4 to 6 jobs a GPU it
reached 0.1 to 0.2 ms, and the fastest fresh window of a kernel was no longer its time (the
false `cheat` and the missed memo of session 17, docs/verification.md "Inside a launch")."""

HOLD_MOST_US = 5000.0
"""The longest hold: a host path longer than this (a compile on the first launch, a preempted
thread) leaves that launch untimed rather than holding every later launch so long."""

CYCLES_PER_US = 2500
"""Clock cycles a microsecond at 2.5 GHz, above any data-centre GPU's SM clock (the H200's
most is 1.98 GHz): `torch.cuda._sleep` spins for cycles, so at a lower clock it lasts longer
and the hold still covers what it claims."""


def _cuda_sleep(us: float) -> None:
    import torch

    torch.cuda._sleep(int(us * CYCLES_PER_US))


class DeviceHold:
    """Keeps the launch stream busy while the host enqueues a timed launch, so that its two
    events time the kernel alone.

    An event records when the stream reaches it. On an idle stream the start event fires as
    soon as the host records it, and the window then holds the host's whole launch path
    (Triton's Python launcher, the binder, a preempted thread) before the kernel even starts:
    tens to hundreds of microseconds against a kernel of a few. Enqueued first, a device-side
    sleep of `us` keeps the stream from reaching the start event while the host enqueues the
    start event, the launch and the end event behind it; the window is then the launch's
    device time. Whether it did is asked of the start event itself once the end event is
    enqueued (`covered`): not reached yet, the whole launch was queued behind the hold (a host
    blocked on a full launch queue included: the GPU was busy then). A launch the hold did not
    cover is untimed, and the next holds grow to 1.5x the host path it measured (up to
    `most`)."""

    def __init__(
        self, sleep: Callable[[float], None], us: float = HOLD_US, most: float = HOLD_MOST_US
    ) -> None:
        self.sleep, self.us, self.most = sleep, float(us), float(most)
        self.untimed = 0

    def start(self) -> tuple[float, float]:
        """Enqueue the hold; returns (host clock now, the microseconds it covers)."""
        now = time.perf_counter()
        self.sleep(self.us)
        return now, self.us

    def covered(self, began: float, us: float, start: Any = None) -> bool:
        """Whether the launch and its end event were enqueued before the stream reached the
        `start` event (its `query()`: done already means the stream waited for the host in
        the window), or, for an event that cannot say, within the hold begun at `began` (host
        clock) for `us`. Grows the next holds when not."""
        host_us = (time.perf_counter() - began) * 1e6
        try:
            ok = not bool(start.query())
        except Exception:  # noqa: BLE001 - no query: the host's clock decides
            ok = host_us < us
        if ok:
            return True
        self.untimed += 1
        if host_us <= self.most:
            self.us = min(self.most, max(self.us, 1.5 * host_us))
        return False


def _capturing() -> bool:
    """Inside a CUDA graph capture: events and sleeps would be captured, not run."""
    try:
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA: nothing is captured
        return False


def _recording_run(
    original: Any, records: list[LaunchRecord], event: Any, hold: DeviceHold | None = None
) -> Any:
    """`original` (a `run`) that first appends the launch's record to `records` and, with an
    `event` type, records one event just before it and one just after (autotuning's benchmark
    launches left untimed), behind a `hold` where there is one."""

    @functools.wraps(original)
    def run(self, *args, **kwargs):
        record = None
        if not kwargs.get("warmup", False):
            record = _make_record(self, args, kwargs)
            if record is not None:
                records.append(record)
        if record is None or event is None or record.autotuning:
            return original(self, *args, **kwargs)
        try:
            if hold is not None and _capturing():
                return original(self, *args, **kwargs)
            start, end = event(), event()
            began, us = hold.start() if hold is not None else (0.0, 0.0)
            start.record()
        except Exception:  # noqa: BLE001 - untimed, the launch goes on
            return original(self, *args, **kwargs)
        try:
            return original(self, *args, **kwargs)
        finally:
            with contextlib.suppress(Exception):  # a faulted context: the fault is the error
                end.record()
                if hold is None or hold.covered(began, us, start):
                    record.events = (start, end)

    return run


# ---------------------------------------------------------------------------------------------
# The launch trace of one forward call (tools.job.worker: the work a forward did on repeated inputs)


def trace_entry(record: LaunchRecord, scalars: bool = True) -> tuple:
    """What one launch did, comparable across forward calls: the kernel (name, file, line: a
    kernel defined in a closure is a new object every call, the same kernel), its grid, the
    Triton signature (argument dtypes), the constexprs, the tensor arguments' shapes and, with
    `scalars`, the values of the plain number arguments (a flag or a size that changes the work;
    left out where a fresh random seed passed as a number is the protocol: stochastic problems).
    Not pointers: a repeated run gets fresh copies of its inputs at other addresses."""
    return (
        record.name,
        record.file,
        record.first_line,
        record.grid,
        tuple(record.signature.items()),
        tuple((k, _stable(v)) for k, v in record.constexprs.items()),
        tuple((k, tuple(v)) for k, v in record.shapes.items()),
        tuple((k, _stable(v)) for k, v in record.scalars.items()) if scalars else (),
        tuple(sorted(record.options.items())),
        record.num_warps,
        record.num_stages,
    )


def launch_trace(records: list[LaunchRecord], scalars: bool = True) -> list[tuple]:
    """The trace of the launches in `records` (one forward call's), autotuning's benchmark
    launches left out (they run once for a key, whenever the autotuner decides)."""
    return [trace_entry(r, scalars) for r in records if not r.autotuning]


MAX_TIMED = 512
"""The most launches of one forward call whose device times go to the judge."""


def note_launch_times(
    result: dict[str, Any], trial: int, run: str, records: list[LaunchRecord], trace: list[tuple]
) -> None:
    """A GPU's evidence of the work inside each launch of one checked run (`records`: its
    forward call's, autotuning's benchmarks left out, in the order of its launch `trace`): each
    launch's kernel, grid, a digest of its trace entry (the judge joins the launches of two runs
    on it; a hash, the same within the job's process) and its device time in ms (None where the
    events could not be read), appended to `result["launch_times"]` for the judge
    (`tools.checks.launch_times`). Called after the run's synchronize; no entry where nothing was timed
    (the CPU: the interpreter's counts instead)."""
    timed = [r for r in records if not r.autotuning][:MAX_TIMED]
    if not any(r.events for r in timed):
        return
    launches = [
        [r.name, list(r.grid) if r.grid else None, _digest(entry), _elapsed(r.events)]
        for r, entry in zip(timed, trace)
    ]
    result.setdefault("launch_times", []).append(
        {"trial": int(trial), "run": str(run), "launches": launches}
    )


def _digest(entry: tuple) -> str:
    try:
        return f"{hash(entry) & 0xFFFFFFFFFFFFFFFF:016x}"
    except TypeError:  # an unhashable value in the entry (none expected): its text
        return f"{hash(repr(entry)) & 0xFFFFFFFFFFFFFFFF:016x}"


def _elapsed(events: Any) -> float | None:
    try:
        start, end = events
        return float(start.elapsed_time(end))
    except Exception:  # noqa: BLE001 - not recorded, or the context faulted
        return None


_COUNTS = "elements"
"""The tag of the counts `with_counts` adds to a trace entry."""


def with_counts(trace: list[tuple], counts: list[tuple[int, int, int]] | None) -> list[tuple]:
    """The trace with, on each launch's entry, the elements its programs loaded, stored and
    touched with atomics inside the launch (`tools.job.interp_races.RaceDetector.work`: CPU, the
    Triton interpreter; None on a GPU, where they are not available: the trace unchanged).
    Counts for launches the recorder did not see (more counts than entries) become entries of
    their own, so they are compared too."""
    if counts is None:
        return trace
    out = [e + ((_COUNTS, *map(int, c)),) for e, c in zip(trace, counts)]
    out += [e + ((_COUNTS, None),) for e in trace[len(counts) :]]
    out += [
        ("?", None, None, None, (), (), (), (), (), 0, 0, (_COUNTS, *map(int, c)))
        for c in counts[len(trace) :]
    ]
    return out


def _counts_of(entry: tuple) -> tuple | None:
    last = entry[-1] if entry else None
    if isinstance(last, tuple) and last[:1] == (_COUNTS,):
        return last[1:]
    return None


def _describe_counts(counts: tuple | None) -> str:
    if counts is None or counts == (None,):
        return "no counts"
    loads, stores, atomics = counts
    return f"{loads} loaded, {stores} stored" + (f", {atomics} atomic" if atomics else "")


def trace_difference(first: list[tuple], again: list[tuple]) -> str | None:
    """None when two calls' traces are equal, else where they first differ, in words."""
    if first == again:
        return None
    for i, (a, b) in enumerate(zip(first, again)):
        if a != b:
            ca, cb = _counts_of(a), _counts_of(b)
            if ca != cb and a[:-1] == b[:-1]:
                grid = tuple(a[3]) if a[3] is not None else "?"
                return (
                    f"launch {i + 1} ({a[0]}, grid {grid}), same arguments, other work inside "
                    f"the kernel: elements {_describe_counts(ca)} the first time, "
                    f"{_describe_counts(cb)} on the repeated inputs (the Triton interpreter's "
                    "counts)"
                )
            return (
                f"launch {i + 1} was {_describe(a)} the first time and {_describe(b)} on the "
                "repeated inputs"
            )
    if len(first) > len(again):
        return (
            f"{len(first)} launches the first time, {len(again)} on the repeated inputs (missing: "
            f"{_describe(first[len(again)])})"
        )
    return (
        f"{len(first)} launches the first time, {len(again)} on the repeated inputs (extra: "
        f"{_describe(again[len(first)])})"
    )


def _describe(entry: tuple) -> str:
    name, _file, _line, grid, _sig, constexprs, shapes, scalars = entry[:8]
    parts = [f"grid {tuple(grid) if grid is not None else '?'}"]
    parts += [f"{k}={v}" for k, v in constexprs]
    parts += [f"{k}={v}" for k, v in scalars]
    parts += [f"{k}{list(v)}" for k, v in shapes]
    return f"{name}[{', '.join(parts)}]"[:300]


def _stable(value: Any) -> Any:
    """A value as the trace compares it: numbers, strings and tuples as they are; anything else
    by its repr without memory addresses (a function made anew each call is the same function)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return tuple(_stable(v) for v in value)
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(jsonable(value)))


def def_line(jit: Any) -> int | None:
    """1-based line of the kernel's `def` (Triton < 3.9 has no `def_file_line_number`)."""
    line = getattr(jit, "def_file_line_number", None)
    if line is not None:
        return line
    try:
        lines, start = inspect.getsourcelines(jit.fn)
    except (OSError, TypeError):
        return None
    for i, text in enumerate(lines):
        if re.match(r"\s*def\s", text):
            return start + i
    return start


def file_name(jit: Any) -> str | None:
    return (
        getattr(jit, "file_name", None)
        or getattr(jit.fn, "__code__", None)
        and jit.fn.__code__.co_filename
    )


def _is_interpreted(kernel: Any) -> bool:
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(unwrapped(kernel), InterpretedFunction)


def _make_record(kernel: Any, args: tuple, kwargs: dict) -> LaunchRecord | None:
    try:
        jit = as_jit(kernel)
        kwargs = dict(kwargs)
        grid = kwargs.pop("grid", None)
        kwargs.pop("warmup", None)
        try:
            bound, specialization, options = _binder(jit)(*args, **kwargs)
        except Exception:
            bound, specialization, options = _specialize_by_hand(jit, args, kwargs)
    except Exception:
        return None
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    aligned: list[str] = []
    shapes: dict[str, list[int]] = {}
    scalars: dict[str, Any] = {}
    for param, (ty, spec) in zip(jit.params, specialization, strict=True):
        signature[param.name] = ty
        value = bound[param.name]
        if ty == "constexpr":
            constexprs[param.name] = value
        else:
            if isinstance(spec, str) and "D" in spec:
                aligned.append(param.name)
            if isinstance(value, bool | int | float):
                scalars[param.name] = value
            elif isinstance(getattr(value, "shape", None), tuple):
                shapes[param.name] = [int(d) for d in value.shape]
    return LaunchRecord(
        name=jit.__name__,
        fn=kernel,
        signature=signature,
        constexprs=constexprs,
        num_warps=int(options.get("num_warps") or DEFAULT_NUM_WARPS),
        num_stages=int(options.get("num_stages") or DEFAULT_NUM_STAGES),
        grid=_resolve_grid(grid, bound),
        file=file_name(jit),
        first_line=def_line(jit),
        aligned=aligned,
        options={
            k: v
            for k, v in options.items()
            if k in _PASSED_OPTIONS and v is not None and v != _PASSED_OPTIONS[k]
        },
        autotuning=_AUTOTUNING.get(),
        shapes=shapes,
        scalars=scalars,
    )


def _resolve_grid(grid: Any, bound: dict[str, Any]) -> tuple[int, ...] | None:
    try:
        if callable(grid):
            grid = grid(bound)
        if isinstance(grid, int):
            grid = (grid,)
        return tuple(int(g) for g in grid)
    except Exception:
        return None


_BINDERS: dict[int, tuple[Any, Any]] = {}


def _binder(jit: Any) -> Any:
    """Triton's own argument binder for `jit` (what the runtime uses to specialise a launch)."""
    cached = _BINDERS.get(id(jit))
    if cached is not None and cached[0] is jit:
        return cached[1]
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget("cuda", 90, 32))
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    _BINDERS[id(jit)] = (jit, binder)
    return binder


_TORCH_TO_TRITON = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "bool": "u1",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float8_e4m3fn": "fp8e4nv",
    "float8_e5m2": "fp8e5",
}


def _specialize_by_hand(jit: Any, args: tuple, kwargs: dict) -> tuple[dict, list, dict]:
    """What Triton's binder returns, for Triton versions whose binder we cannot call."""
    names = [p.name for p in jit.params]
    options = {k: v for k, v in kwargs.items() if k not in names}
    call = inspect.signature(jit.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in names})
    call.apply_defaults()
    bound = dict(call.arguments)
    specialization = []
    for param in jit.params:
        value = bound[param.name]
        if (
            param.is_constexpr
            or value is None
            or (isinstance(value, int) and value == 1 and not isinstance(value, bool))
        ):
            specialization.append(("constexpr", value))
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):
            dtype = _TORCH_TO_TRITON.get(str(value.dtype).removeprefix("torch."), str(value.dtype))
            specialization.append(("*" + dtype, "D" if value.data_ptr() % 16 == 0 else ""))
        elif isinstance(value, bool):
            specialization.append(("u1", None))
        elif isinstance(value, int):
            ty = "i32" if -(2**31) <= value < 2**31 else "u64" if value >= 2**63 else "i64"
            aligned = value % 16 == 0 and not param.do_not_specialize
            specialization.append((ty, "D" if aligned else ""))
        elif isinstance(value, float):
            specialization.append(("fp32", None))
        else:
            raise TypeError(f"cannot type argument {param.name}={value!r}")
    return bound, specialization, options


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return str(value)
