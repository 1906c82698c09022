"""Eager also timed with `torch.backends.cudnn.benchmark = True` (issue 35): what a user tuning
convolutions sets, timed in the timing job beside the bar (`tools.orchestrate.baselines.cudnn_benchmark`,
`tools.job.profile_worker._time_baselines`), in a thread of its own. On the CPU the setting changes
nothing, so these tests check where it is applied: on for that one eager timing, in its own
thread, off again for torch.compile's and for everything after (the candidate is timed after
the baselines, in the same process), also when the timing raises; cached, carried into the
profile's result and speedups, and an older cache entry without it timed again."""

from __future__ import annotations

import threading

import pytest
import torch

from tools.job import profile_worker
from tools.orchestrate.baselines import (
    CUDNN_BENCHMARK,
    cache_covers,
    cudnn_benchmark,
    remember_baselines,
)
from tools.orchestrate.evaluate import speedups_of


class _Timer:
    """Records the cudnn.benchmark setting each timed sequence ran under; a sequence's samples
    are its position (1.0, 2.0, ...) in milliseconds."""

    def __init__(self, fail_under_benchmark: bool = False):
        self.seen: list[bool] = []
        self.threads: list[int] = []
        self.fail = fail_under_benchmark
        self.last_host_ms = 0.0

    def measure(self, fn, sets):
        self.seen.append(torch.backends.cudnn.benchmark)
        self.threads.append(threading.get_ident())
        if self.fail and torch.backends.cudnn.benchmark:
            raise RuntimeError("CUDNN_STATUS_NOT_SUPPORTED (a workspace too large)")
        fn(sets[0])
        return [float(len(self.seen))] * 5


@pytest.fixture
def job(monkeypatch):
    """`_time_baselines`' collaborators that need a GPU replaced: the per-kernel breakdown, and
    torch.compile's timing by one that times eager through the same timer."""
    monkeypatch.setattr(profile_worker, "_kernels_or_none", lambda *a: None)

    def compiled(baselines, timer, model, sets, settings):
        baselines["compile_samples"] = timer.measure(lambda args: model(*args), sets)

    monkeypatch.setattr(profile_worker, "_time_compiled", compiled)
    model = torch.nn.Conv2d(3, 4, 3)
    sets = [[torch.randn(1, 3, 8, 8)]]

    def eager(args):
        with torch.no_grad():
            return model(*args)

    assert torch.backends.cudnn.benchmark is False  # PyTorch's default, what the job starts with
    return model, eager, sets


def _time(job, timer, cached=None):
    model, eager, sets = job
    result: dict = {"notes": []}
    settings = {"compile": True, "profile_calls": 1}
    profile_worker._time_baselines(result, timer, model, eager, sets, settings, cached or {})
    return result


def test_one_eager_timing_runs_with_cudnn_benchmark_and_nothing_after_it(job):
    timer = _Timer()
    result = _time(job, timer)
    b = result["baselines"]
    assert f"{CUDNN_BENCHMARK}_samples" in b and "eager_samples" in b and "compile_samples" in b
    assert timer.seen.count(True) == 1  # that eager timing alone
    eager_at = 0
    cudnn_at = b[f"{CUDNN_BENCHMARK}_samples"][0] - 1
    compile_at = b["compile_samples"][0] - 1
    assert timer.seen[int(cudnn_at)] is True
    assert timer.seen[eager_at] is False and timer.seen[int(compile_at)] is False  # the bar
    assert torch.backends.cudnn.benchmark is False  # what the candidate is timed under
    # In a thread of its own (PyTorch's per-thread plan cache, keyed without the setting: in
    # the job's thread cuDNN would reuse eager's default pick, and torch.compile the found one)
    me = threading.get_ident()
    assert timer.threads[int(cudnn_at)] != me
    assert timer.threads[eager_at] == me and timer.threads[int(compile_at)] == me


def test_a_failure_under_cudnn_benchmark_is_a_note_and_the_setting_is_restored(job):
    timer = _Timer(fail_under_benchmark=True)
    b = _time(job, timer)["baselines"]
    assert "NOT_SUPPORTED" in b[f"{CUDNN_BENCHMARK}_error"]
    assert "compile_samples" in b and torch.backends.cudnn.benchmark is False


def test_the_setting_comes_back_as_it_was():
    torch.backends.cudnn.benchmark = True  # a process that had it on keeps it on
    try:
        with cudnn_benchmark():
            assert torch.backends.cudnn.benchmark is True
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = False
    with pytest.raises(ValueError), cudnn_benchmark():
        raise ValueError
    assert torch.backends.cudnn.benchmark is False


def test_an_older_cache_entry_is_timed_again(job):
    stats = {"median_ms": 1.0, "p20_ms": 1.0, "p80_ms": 1.0, "min_ms": 1.0, "n": 5}
    old = {"eager": stats, "compile": stats, "eager_fp32": stats, "method": 3}
    assert not cache_covers(old, want_compile=True, tf32=False)
    result = _time(job, _Timer(), cached=old)
    assert result["baselines_from_cache"] is False
    new = {**old, CUDNN_BENCHMARK: stats}
    assert cache_covers(new, want_compile=True, tf32=False)
    failed = {**old, f"{CUDNN_BENCHMARK}_error": "RuntimeError: ..."}
    assert cache_covers(failed, want_compile=True, tf32=False)  # not retried every time
    assert _time(job, _Timer(), cached=new)["baselines_from_cache"] is True


def test_cached_and_carried_into_the_profile(job, monkeypatch, tmp_path):
    from tools.orchestrate.profile import _opened, _timed
    from tools.orchestrate.profile_result import ProfileOptions

    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    data = _time(job, _Timer())  # each sequence's samples: its position, in ms
    data.update(device="cuda", torch_version="t")
    b = data["baselines"]
    eager, cb, compiled = (b[f"{k}_samples"][0] for k in ("eager", CUDNN_BENCHMARK, "compile"))
    assert eager < cb < compiled

    class _Prob:
        digest = "d"

    remember_baselines(data, _Prob(), ProfileOptions())
    from tools.orchestrate.baselines import load_cache

    (entry,) = load_cache()["baselines"].values()
    assert entry[CUDNN_BENCHMARK]["median_ms"] == pytest.approx(cb)
    base = {"problem": "p.py", "kernel": "k.py", "baseline": "best", "torch_version": "t"}
    r = _opened({**data, "notes": []}, None, base)
    assert r.eager_cudnn_benchmark.median_ms == pytest.approx(cb)
    data["candidate_samples"] = [[0.5] * 5, [0.5] * 5]
    _timed(r, data, b, ProfileOptions())
    sp = speedups_of(r.to_dict())
    assert sp[CUDNN_BENCHMARK] == pytest.approx(cb / 0.5) and sp["eager"] == pytest.approx(
        eager / 0.5
    )
    assert sp["best"] == pytest.approx(eager / 0.5)  # the bar: the faster of eager and compile
