"""The timing job at KernelBench's sizes (inputs of 1.6-6.4 GB): few full-size tensors alive, a
chunked freshness check, a host memory cap that grows with the problem, and baseline cache keys
that name the Triton version. CPU only: the job's pieces are tested on CPU tensors."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tools.checks.freshness import check_freshness, fill_fresh, host_originals, reference_on_fresh
from tools.checks.roofline import input_sets_for
from tools.checks.timing import input_sets, timing_sets
from tools.core.results import Verdict
from tools.job.profile_worker import _work
from tools.orchestrate import baselines
from tools.orchestrate.baselines import (
    TIMING_METHOD,
    baseline_key,
    cached_baselines_for,
    load_cache,
)
from tools.orchestrate.profile import TIMING_MEMORY_FLOOR_MB, assemble, timing_memory_mb
from tools.orchestrate.profile_result import ProfileOptions
from tools.sandboxing.sandbox import JobOutcome

ROOT = Path(__file__).resolve().parent.parent
H200_L2 = 60 << 20
RELU_4096x393216_FP32 = 4096 * 393216 * 4  # 6.4 GB, KernelBench level 1
GB_1_6 = 1_600_000_000


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path / "cache"))


# ---------------------------------------------------------------------------- input sets


@pytest.mark.parametrize("nbytes", [GB_1_6, RELU_4096x393216_FP32, 300 << 20, 61 << 20])
def test_one_input_set_at_kernelbench_sizes(nbytes):
    assert input_sets_for(nbytes, H200_L2) == 1
    assert input_sets(nbytes, H200_L2) == 1


def test_no_rotation_above_256_mib_even_with_a_huge_l2():
    l2 = 1 << 30  # a cache larger than any set here: input_sets_for alone would rotate
    assert input_sets_for(300 << 20, l2) > 1
    assert input_sets(300 << 20, l2) == 1
    assert input_sets(200 << 20, l2) == input_sets_for(200 << 20, l2) > 1


def test_small_sets_still_rotate_to_cover_twice_the_l2():
    assert input_sets(1 << 20, H200_L2) == 8
    assert input_sets(40 << 20, H200_L2) == 3  # ceil(120 / 40)


def test_timing_sets_use_the_inputs_themselves_first():
    base = [torch.randn(33, 7), 3]
    (only,) = timing_sets(base, 1)
    assert only is base and only[0] is base[0]  # no clone of a large problem's inputs
    sets = timing_sets(base, 3)
    assert sets[0] is base and len(sets) == 3
    for s in sets[1:]:
        assert s[0].data_ptr() != base[0].data_ptr()
        assert torch.equal(s[0], base[0]) and s[1] == 3  # identical values in every set


# ---------------------------------------------------------------------------- job pieces


class _Relu(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


class _Identity(torch.nn.Module):
    def forward(self, x):
        return x


def test_work_does_not_clone_the_inputs_and_counts_bytes(monkeypatch):
    x = torch.randn(64, 48)
    monkeypatch.setattr(torch.Tensor, "clone", lambda *a, **k: pytest.fail("_work cloned a tensor"))
    work = _work(_Relu(), [x])
    assert work["input_bytes"] == x.numel() * 4
    assert work["bytes"] == 2 * x.numel() * 4  # read once, written once
    assert work["dtype"] == "torch.float32"


def test_fresh_values_are_reproducible_in_place_and_only_for_floats():
    x, idx = torch.zeros(1000), torch.arange(10)
    fill_fresh([x, idx], seed=7)
    first = x.clone()
    assert torch.equal(idx, torch.arange(10))  # integer inputs keep their values
    assert 0.0 < float(first.mean()) < 0.5 and 1.3 < float(first.std()) < 1.7  # N(0.25, 1.5)
    x.zero_()
    fill_fresh([x, idx], seed=7)
    assert torch.equal(x, first)
    fill_fresh([x], seed=8)
    assert not torch.equal(x, first)


def test_reference_on_fresh_uses_the_buffers_then_restores_them():
    host = [torch.randn(40, 30)]
    base = [host[0].clone()]  # stands for the device copy
    originals = host_originals(host, base)
    assert originals[0] is host[0]  # a host tensor is not copied again
    ref = reference_on_fresh(_Relu(), base, originals, lambda b: fill_fresh(b, 5))
    assert torch.equal(base[0], host[0])  # the timed inputs are the original values
    probe = [torch.empty_like(base[0])]
    fill_fresh(probe, 5)
    assert torch.equal(ref[0], torch.relu(probe[0]))


def test_reference_of_a_model_returning_its_input_survives_the_restore():
    x = torch.randn(50)
    original = x.clone()
    originals = host_originals([x], [x])  # already on the "device": a copy is kept
    assert originals[0] is not x and torch.equal(originals[0], original)
    ref = reference_on_fresh(_Identity(), [x], originals, lambda b: fill_fresh(b, 9))
    assert torch.equal(x, original)
    assert not torch.equal(ref[0], original)  # the new values, not the restored ones


# ---------------------------------------------------------------------------- freshness


def _candidates():
    cache: dict = {}

    def cached_relu(args):
        x = args[0]
        return cache.setdefault(x.data_ptr(), torch.relu(x))

    def honest_relu(args):
        return torch.relu(args[0])

    return cached_relu, honest_relu


def _job_freshness(call, x, **kw):
    """The job's sequence on CPU: reference on new values in the buffers, restore, time, check."""
    bufs = [x]

    def fill(b):
        fill_fresh(b, 1234)

    ref = reference_on_fresh(_Relu(), bufs, host_originals([x.clone()], bufs), fill)
    for _ in range(3):
        call(bufs)  # the timed calls, on the original values
    return check_freshness(call, bufs, fill, ref, 1e-5, 1e-5, **kw)


@pytest.mark.parametrize("chunk_elems", [7, 1 << 24])
def test_freshness_with_regenerated_values_catches_a_cached_result(chunk_elems):
    cached, honest = _candidates()
    bad = _job_freshness(cached, torch.randn(333, 31), chunk_elems=chunk_elems)
    assert bad["checked"] and not bad["ok"]
    assert "of 10323 elements wrong" in bad["message"]
    good = _job_freshness(honest, torch.randn(333, 31), chunk_elems=chunk_elems)
    assert good == {
        "checked": True,
        "ok": True,
        "message": "output follows new values in the same buffers",
    }


def test_freshness_in_chunks_finds_a_stale_tail_and_never_widens_a_whole_output(monkeypatch):
    n, chunk = 1023, 64
    x = torch.randn(n)

    def stale_tail(args):  # right except the last 5 elements, kept from the timed run
        out = torch.relu(args[0])
        out[-5:] = 0.0 if float(args[0][-5:].abs().sum()) == 0 else -1.0
        return out

    widened: list[int] = []
    double = torch.Tensor.double

    def spy(self, *a, **k):
        widened.append(self.numel())
        return double(self, *a, **k)

    monkeypatch.setattr(torch.Tensor, "double", spy)
    r = _job_freshness(stale_tail, x, chunk_elems=chunk)
    assert not r["ok"] and "5 of 1023 elements wrong" in r["message"]
    assert widened and max(widened) <= chunk


def test_freshness_on_a_non_contiguous_output_in_chunks():
    x = torch.randn(37, 29)

    def transposed(args):
        return torch.relu(args[0]).t().contiguous().t()  # same values, column-major

    r = _job_freshness(transposed, x, chunk_elems=10)
    assert r["ok"], r
    cached, _ = _candidates()
    r = _job_freshness(
        lambda a: cached(a).t().contiguous().t(), torch.randn(37, 29), chunk_elems=10
    )
    assert not r["ok"]


def test_freshness_reports_a_shape_change():
    r = _job_freshness(lambda a: torch.relu(a[0])[:-1], torch.randn(20), chunk_elems=8)
    assert not r["ok"] and "changed shape" in r["message"]


# ---------------------------------------------------------------------------- cache key


def test_baseline_key_names_device_torch_and_triton():
    key = baseline_key("abc", "NVIDIA H200", "2.11.0", "3.6.0")
    assert key.split("|") == ["abc", "NVIDIA H200", "2.11.0", "3.6.0"]
    assert baseline_key("abc", "NVIDIA H200", "2.11.0").split("|")[3] == (
        baselines.installed_triton_version()
    )


def test_cached_baselines_miss_another_triton_and_old_keys():
    entry = {"eager": {}, "method": TIMING_METHOD}
    cache = {
        "baselines": {
            baseline_key("abc", "H100", "2.11.0", "3.6.0"): entry,
            baseline_key("abc", "A100", "2.11.0", "3.5.0"): entry,  # another Triton
            "abc|L40S|2.11.0": entry,  # written before the key had a Triton version
            baseline_key("xyz", "B200", "2.11.0", "3.6.0"): entry,  # another problem
        }
    }
    assert set(cached_baselines_for(cache, "abc", "2.11.0", "3.6.0")) == {"H100"}
    assert set(cached_baselines_for(cache, "abc", "2.11.0", "3.5.0")) == {"A100"}
    assert cached_baselines_for(cache, "abc", "2.9.0", "3.6.0") == {}


def test_remembered_baselines_are_found_under_this_triton_only(monkeypatch):
    from tools.core.problem import problem_from_source
    from tools.orchestrate.baselines import remember_baselines

    relu = ROOT / "examples" / "problems" / "relu.py"
    prob = problem_from_source(relu.read_text(), str(relu))
    data = {
        "device": "NVIDIA H200",
        "torch_version": "2.11.0",
        "baselines": {"eager_samples": [0.02] * 20},
        "baselines_from_cache": False,
    }
    monkeypatch.setattr(baselines, "installed_triton_version", lambda: "3.6.0")
    remember_baselines(data, prob, ProfileOptions())
    cache = load_cache()
    assert set(cached_baselines_for(cache, prob.digest, "2.11.0")) == {"NVIDIA H200"}
    monkeypatch.setattr(baselines, "installed_triton_version", lambda: "3.7.0")
    assert cached_baselines_for(cache, prob.digest, "2.11.0") == {}


# ---------------------------------------------------------------------------- limits and report


def _verdict(footprint=None) -> Verdict:
    v = Verdict(status="ok", compiled=True, correct=True, message="ok", device="cuda")
    if footprint is not None:
        v.evidence = SimpleNamespace(footprint=footprint)  # type: ignore[assignment]
    return v


def test_memory_cap_is_derived_from_the_footprint():
    derive = ProfileOptions()
    assert derive.memory_mb is None
    assert timing_memory_mb(derive, _verdict()) == TIMING_MEMORY_FLOOR_MB  # no figures yet
    small = {"input_bytes": 52_000, "output_bytes": 52_000}
    assert timing_memory_mb(derive, _verdict(small)) == TIMING_MEMORY_FLOOR_MB
    huge = {"input_bytes": RELU_4096x393216_FP32, "output_bytes": RELU_4096x393216_FP32}
    problem_mb = math.ceil(2 * RELU_4096x393216_FP32 / 2**20)
    assert timing_memory_mb(derive, _verdict(huge)) == 4096 + 3 * problem_mb == 40960
    as_object = SimpleNamespace(**huge)
    assert timing_memory_mb(derive, _verdict(as_object)) == 40960
    with_params = {**huge, "param_bytes": 1 << 30}
    assert timing_memory_mb(derive, _verdict(with_params)) == 40960 + 3 * 1024
    for broken in ({}, {"input_bytes": RELU_4096x393216_FP32}, {"input_bytes": "x"}, 12):
        assert timing_memory_mb(derive, _verdict(broken)) == TIMING_MEMORY_FLOOR_MB
    assert timing_memory_mb(ProfileOptions(memory_mb=9000), _verdict(huge)) == 9000


def test_the_timing_job_runs_under_the_derived_cap():
    from tools.orchestrate.profile import profile

    relu = ROOT / "examples" / "problems" / "relu.py"
    huge = {"input_bytes": GB_1_6, "output_bytes": RELU_4096x393216_FP32}
    seen: dict = {}

    class _Sandbox:
        def run(self, fn, *args, **kwargs):
            seen["limits"] = kwargs["limits"]
            return JobOutcome(kind="error", error="stop here")

    class _Verifier:
        device = "cuda"
        sandbox = _Sandbox()
        options = SimpleNamespace(seed=0, precision="fp32")  # a VerifyOptions stand-in

        def verify(self, problem, source, path, triton_cache_out=None):
            return _verdict(huge)

    verifier = _Verifier()
    profile(relu, "irrelevant", verifier=verifier, options=ProfileOptions(use_cache=False))  # type: ignore[arg-type]
    expected = 4096 + 3 * math.ceil((GB_1_6 + RELU_4096x393216_FP32) / 2**20)
    assert expected > TIMING_MEMORY_FLOOR_MB and seen["limits"].memory_mb == expected


def test_the_jobs_memory_peaks_reach_the_result():
    data = {
        "device": "NVIDIA H200",
        "baselines": {"eager_samples": [0.02] * 20},
        "candidate_samples": [[0.01] * 20, [0.01] * 20],
        "fresh": {"checked": True, "ok": True, "message": ""},
        "memory": {"gpu_peak_mb": 19600.0, "host_peak_mb": 7100.5},
    }
    kw = dict(problem="p.py", kernel="k.py", baseline="eager")
    r = assemble(data, _verdict(), ProfileOptions(), **kw)
    assert r.memory == {"gpu_peak_mb": 19600.0, "host_peak_mb": 7100.5}
    assert r.to_dict()["memory"]["gpu_peak_mb"] == 19600.0
    del data["memory"]
    assert assemble(data, _verdict(), ProfileOptions(), **kw).to_dict()["memory"] is None


class _Cancel(torch.nn.Module):
    """(x + 1e4) - 1e4: fp32 keeps about 1e-3 of x; fp64 keeps x."""

    def forward(self, x):
        return (x + 1e4) - 1e4


def test_freshness_applies_the_judges_fp64_rule_when_asked():
    """A kernel the judge accepted by its fp64 rule (more accurate than PyTorch's fp32) must not
    be refuted as stale by the timing job's freshness check, which compares at the same
    tolerance; a cached result still is."""
    from tools.checks.freshness import fp64_outputs

    def accurate(args):  # correctly rounded: never farther from fp64 than PyTorch's fp32
        return ((args[0].double() + 1e4) - 1e4).float()

    cache: dict = {}

    def cached(args):
        x = args[0]
        return cache.setdefault(x.data_ptr(), accurate(args))

    def check(call, fp64):
        x = torch.randn(4000)
        bufs = [x]

        def fill(b):
            fill_fresh(b, 77)

        ref64: list | None = [] if fp64 else None
        ref = reference_on_fresh(_Cancel(), bufs, host_originals([x.clone()], bufs), fill, ref64)
        call(bufs)
        return check_freshness(call, bufs, fill, ref, 1e-6, 1e-6, expected64=ref64)

    assert not check(accurate, fp64=False)["ok"]  # 1e-3 off the fp32 reference: refuted
    assert check(accurate, fp64=True)["ok"]
    assert not check(cached, fp64=True)["ok"]  # stale stays stale
    assert fp64_outputs(_Cancel(), [torch.ones(3)])[0].dtype == torch.float64


def test_freshness_uses_the_judges_allowance_over_draws():
    """Where the judge needed PyTorch's error over several draws (`fp32_error_allowance`), the
    freshness check makes the same allowance on its new values, before the candidate runs."""
    from tests.test_fp64_accepted import _cancelling_inputs, _MatVec

    values = _cancelling_inputs(3)
    bufs = [torch.zeros_like(v) for v in values]

    def fill(b):
        for dst, src in zip(b, values):
            dst.copy_(src)

    def check(call, with_allowance):
        ref64: list = []
        allow: list | None = [] if with_allowance else None
        originals = host_originals([b.clone() for b in bufs], bufs)
        ref = reference_on_fresh(_MatVec(), bufs, originals, fill, ref64, allow, seed=5)
        if with_allowance:
            assert len(allow) == 1 and allow[0].shape == ref[0].shape
        return check_freshness(
            call, bufs, fill, ref, 1e-4, 1e-4, expected64=ref64, allowance64=allow
        )

    x, w = values
    r64 = x.double() @ w.double()
    own = (x @ w).double() - r64
    allow = fp32_error_allowance_for(values, r64)
    # On the rows that cancel, 0.9x PyTorch's largest error over the draws, on the side its own
    # draw is not: farther than its one draw where that one was small.
    worse = (r64 - 0.9 * allow * own.sign()).float()

    def candidate(args):
        return worse.clone()

    assert not check(candidate, with_allowance=False)["ok"]
    assert check(candidate, with_allowance=True)["ok"]


def fp32_error_allowance_for(values, r64):
    from tests.test_fp64_accepted import _MatVec
    from tools.checks.freshness import fp32_error_allowance

    x, w = values
    return fp32_error_allowance(
        _MatVec(), lambda: [v.clone() for v in values], [x @ w], [r64], seed=5
    )[0].double()


def test_fp64_rule_reaches_the_timing_job_through_the_verdict():
    """The judge's count of fp64-accepted elements is in the verdict's evidence (and JSON)."""
    from tools.core.results import Evidence, Verdict
    from tools.orchestrate.verdict_rules import _fp64_count

    assert _fp64_count([(0, "first", {"kind": "ok", "fp64_accepted": 3}), (0, "second", {})]) == 3
    v = Verdict(status="ok", compiled=True, correct=True, message="m", evidence=Evidence())
    v.evidence.fp64_accepted = 3
    assert Verdict.from_dict(v.to_dict()).evidence.fp64_accepted == 3
