"""The baselines cache: eager and `torch.compile` timings per (problem digest, device name, torch
version, Triton version, timing method) and the device peaks per device name, kept in
`$TRITON_AGENT_CACHE/baselines.json` (default `~/.cache/triton-agent/`) so a problem's baselines
are timed once per machine."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tools.cache import cache_dir, read_json, write_json
from tools.problem import Problem
from tools.problem_dtype import cache_suffix
from tools.profile_result import ProfileOptions
from tools.roofline import summarize

CACHE_VERSION = 1


TIMING_METHOD = 3
"""Version of the timing method (tools/timing.py). Cached baselines timed another way
are not compared with a candidate timed this way. 1: session 1's synchronised events; 2: padded
events on the caller's stream, checked against the profiler; 3: new input values before every timed
call (tools.timing.Freshness: a memo keyed on input contents gains nothing)."""


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
    at `precision` (`tools.problem_dtype.cache_suffix`: a bf16 problem's eager is not fp32's)."""
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
