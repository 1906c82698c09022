"""The baselines cache: eager and `torch.compile` timings per (problem digest, device name, torch
version, Triton version, timing method) and the device peaks per device name, kept in
`$TRITON_AGENT_CACHE/baselines.json` (default `~/.cache/triton-agent/`) so a problem's baselines
are timed once per machine. Also the one setting a baseline is timed under beside PyTorch's
defaults, eager with `cudnn.benchmark` (`cudnn_benchmark`, `time_eager_cudnn_benchmark`: run in
the timing job, `tools.job.profile_worker`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from tools.checks.roofline import summarize
from tools.core.cache import cache_dir, read_json, write_json
from tools.core.problem import Problem
from tools.core.problem_dtype import cache_suffix
from tools.orchestrate.profile_result import ProfileOptions

CACHE_VERSION = 1


TIMING_METHOD = 3
"""Version of the timing method (tools/checks/timing.py). Cached baselines timed another way
are not compared with a candidate timed this way. 1: session 1's synchronised events; 2: padded
events on the caller's stream, checked against the profiler; 3: new input values before every timed
call (tools.checks.timing.Freshness: a memo keyed on input contents gains nothing)."""

CUDNN_BENCHMARK = "eager_cudnn_benchmark"
"""Eager timed again with `torch.backends.cudnn.benchmark = True` (issue 35): what a user tuning
convolutions sets (cuDNN times its algorithms on the first call of each shape and keeps the
fastest, where PyTorch's default takes its heuristic's pick). The issue found the headline's
top speedups were convolutions against the default pick. Evidence beside the bar, never the bar
(the better of eager and torch.compile at PyTorch's defaults, the speed a user has without
tuning); the key of its samples, cache entry and speedups."""


@contextmanager
def cudnn_benchmark() -> Iterator[None]:
    """`torch.backends.cudnn.benchmark = True` while the block runs; the previous setting back
    after it, also when it raises: the other baselines and the candidate are timed with it as
    it was (PyTorch's default, off)."""
    import torch

    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = saved


def time_eager_cudnn_benchmark(
    baselines: dict[str, Any], timer: Any, eager: Any, sets: list
) -> None:
    """Eager timed under `cudnn_benchmark` into `baselines` (`CUDNN_BENCHMARK` + `_samples`;
    its warm-up makes cuDNN's algorithm search, outside the timed calls), or the error that
    stopped it (`_error`: evidence for the report, never a failed timing).

    In a thread of its own, the job's thread waiting: PyTorch keeps the convolution plan it
    picked per shape in a cache of each thread (cuDNN's v8 API: `benchmark_cache`, thread_local
    in aten/src/ATen/native/cudnn/Conv_v8.cpp) whose key leaves the benchmark setting out. In
    the job's thread, where eager already ran at PyTorch's default (the freshness reference, the
    eager timing), cuDNN would reuse that default pick and never search; and the plans the
    search finds would be reused by torch.compile's convolutions and so move the bar. A new
    thread starts with an empty cache and takes its plans with it."""
    out: dict[str, Any] = {}

    def timed() -> None:
        try:
            with cudnn_benchmark():
                out["samples"] = timer.measure(eager, sets)
        except Exception as exc:  # noqa: BLE001 - out of memory for a workspace included
            out["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"

    worker = threading.Thread(target=timed, name="eager-cudnn-benchmark")
    worker.start()
    worker.join()
    if "samples" in out:
        baselines[f"{CUDNN_BENCHMARK}_samples"] = out["samples"]
    else:
        baselines[f"{CUDNN_BENCHMARK}_error"] = out.get("error", "the timing thread ended early")


def cache_covers(cached: dict[str, Any], *, want_compile: bool, tf32: bool) -> bool:
    """Whether a cached entry holds every baseline the timing job would time now: eager,
    torch.compile where wanted (or why it failed), eager with TF32 off where eager ran TF32,
    eager with `cudnn.benchmark` (or why it failed). An entry from before one of them was
    timed is timed again."""
    return bool(
        cached.get("eager")
        and (not want_compile or "compile" in cached or "compile_error" in cached)
        and not (tf32 and "eager_fp32" not in cached)
        and (CUDNN_BENCHMARK in cached or f"{CUDNN_BENCHMARK}_error" in cached)
    )


def load_cache() -> dict[str, Any]:
    data = read_json(cache_dir() / "baselines.json")
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {"version": CACHE_VERSION, "baselines": {}, "peaks": {}}
    data.setdefault("baselines", {})
    data.setdefault("peaks", {})
    return data


def save_cache(update: dict[str, Any]) -> None:
    """Merge `update` (`baselines` / `peaks` entries) into the cache file, atomically."""
    data = load_cache()
    for section in ("baselines", "peaks"):
        data[section].update(update.get(section, {}))
    write_json(cache_dir() / "baselines.json", data, indent=1)


def installed_triton_version() -> str:
    """The installed Triton's version (the sandbox's jobs import the same one); '' without one."""
    try:
        import triton
    except ImportError:
        return ""
    return str(triton.__version__)


def baseline_key(
    digest: str, device: str, torch_version: str, triton_version: str | None = None
) -> str:
    """`digest|device|torch|triton`. The Triton version defaults to the installed one: a
    baseline timed under another Triton (torch.compile generates Triton code) is not reused."""
    tv = installed_triton_version() if triton_version is None else triton_version
    return f"{digest}|{device}|{torch_version}|{tv}"


def cached_baselines_for(
    cache: dict[str, Any], digest: str, torch_version: str, triton_version: str | None = None
) -> dict[str, dict[str, Any]]:
    """device name -> cached baselines of this problem, torch and Triton version (default: the
    installed Triton), timed with this version of the timing method (others are not comparable
    with a candidate timed now). Entries written before the key had a Triton version never
    match."""
    tv = installed_triton_version() if triton_version is None else triton_version
    prefix, suffix = f"{digest}|", f"|{torch_version}|{tv}"
    return {
        k[len(prefix) : -len(suffix)]: e
        for k, e in cache.get("baselines", {}).items()
        if len(k) > len(prefix) + len(suffix)
        and k.startswith(prefix)
        and k.endswith(suffix)
        and e.get("method") == TIMING_METHOD
    }


def remember_baselines(
    data: dict[str, Any], prob: Problem, opts: ProfileOptions, precision: str = "fp32"
) -> None:
    """Keep the timing job's baselines (and peaks) in the cache, keyed by the problem's digest
    at `precision` (`tools.core.problem_dtype.cache_suffix`: a bf16 problem's eager is not fp32's)."""
    if not opts.use_cache:
        return
    device = data.get("device", "cuda")
    update: dict[str, Any] = {"baselines": {}, "peaks": {}}
    if data.get("peaks_measured") and data.get("peaks"):
        update["peaks"][device] = data["peaks"]
    b = data.get("baselines") or {}
    if not data.get("baselines_from_cache") and "eager_samples" in b:
        entry: dict[str, Any] = {
            "eager": asdict(summarize(b["eager_samples"])),
            "method": TIMING_METHOD,
        }
        if "compile_samples" in b:
            entry["compile"] = asdict(summarize(b["compile_samples"]))
        if "eager_fp32_samples" in b:
            entry["eager_fp32"] = asdict(summarize(b["eager_fp32_samples"]))
        if f"{CUDNN_BENCHMARK}_samples" in b:
            entry[CUDNN_BENCHMARK] = asdict(summarize(b[f"{CUDNN_BENCHMARK}_samples"]))
        elif b.get(f"{CUDNN_BENCHMARK}_error"):
            entry[f"{CUDNN_BENCHMARK}_error"] = b[f"{CUDNN_BENCHMARK}_error"]
        for k in ("eager_host_ms", "compile_host_ms"):
            if isinstance(b.get(k), (int, float)):
                entry[k] = b[k]
        if b.get("compile_error"):
            entry["compile_error"] = b["compile_error"]
        # The installed Triton, as in the lookup (`cached_baselines_for`), so entries are found.
        key = baseline_key(
            prob.digest + cache_suffix(precision),
            device,
            data.get("torch_version", ""),
            installed_triton_version(),
        )
        update["baselines"][key] = entry
    save_cache(update)
