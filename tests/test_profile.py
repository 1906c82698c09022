"""Profiling: statistics, roofline arithmetic and report text (pure, CPU), the CPU `unavailable`
path through the CLI, never timing an incorrect kernel; adversarial timing candidates on a GPU."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.helpers import EX, last_json, last_json_line
from tools.checks.roofline import (
    DevicePeaks,
    KernelTime,
    agree,
    input_sets_for,
    kernel_line,
    percentile,
    repetitions,
    roofline,
    settle,
    speedup,
    summarize,
)
from tools.core.problem import read_kernel, read_problem
from tools.core.results import Verdict
from tools.orchestrate.baselines import baseline_key, load_cache, save_cache
from tools.orchestrate.profile import assemble, profile, rescaled_problem
from tools.orchestrate.profile_result import PROFILE_STATUSES, ProfileOptions, ProfileResult

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "profile"
RELU = EX / "problems" / "relu.py"
H200 = DevicePeaks(device="NVIDIA H200", bandwidth=4.3e12, flops={"bf16": 7.9e14, "fp32": 5.0e13})


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path / "cache"))


# ---------------------------------------------------------------------------- statistics


def test_summarize_median_percentiles_spread():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s.median_ms == 3.0 and s.min_ms == 1.0 and s.n == 5
    assert s.p20_ms == pytest.approx(1.8) and s.p80_ms == pytest.approx(4.2)
    assert s.iqr_ms == pytest.approx(2.0)
    assert s.std_ms == pytest.approx(math.sqrt(2.0))
    assert s.rel_spread == pytest.approx(2.0 / 3.0)
    assert percentile([1.0, 2.0], 0.5) == 1.5
    with pytest.raises(ValueError):
        summarize([])


def test_two_sequences_agree_within_noise_floor_or_twice_the_spread():
    a = summarize([1.00, 1.00, 1.00, 1.00])
    assert agree(a, summarize([1.02] * 4))  # 2% < 3% floor
    assert not agree(a, summarize([1.10] * 4))  # 10%, no spread
    wide = summarize([0.9, 1.0, 1.1, 1.2, 1.3])  # IQR 0.2 around 1.1: 2x18% allowed
    assert agree(wide, summarize([1.0] * 5))


def test_settle_keeps_the_agreeing_pair_or_flags_noise():
    a, b, c = (summarize([x] * 3) for x in (1.0, 1.5, 1.01))
    assert settle([a, summarize([1.0] * 3)]) == ([0, 1], False)
    assert settle([a, b, c]) == ([0, 2], False)  # the re-time agreed with the first
    assert settle([a, b, summarize([2.5] * 3)])[1] is True


def test_speedup_with_range():
    base = summarize([10.0, 10.0, 10.0, 10.0, 10.0])
    cand = summarize([4.0, 5.0, 5.0, 5.0, 6.0])
    s = speedup(base, cand)
    assert s.value == pytest.approx(2.0)
    assert s.low < s.value < s.high


def test_input_sets_and_repetitions():
    l2 = 50 << 20
    assert input_sets_for(52_000, l2) == 8  # tiny inputs: the most sets
    assert input_sets_for(30 << 20, l2) == 4  # 2 x L2 over 30 MB
    assert input_sets_for(256 << 20, l2) == 1  # one set overflows the L2 already
    assert repetitions(0.005, budget_ms=100, least=20, most=1000) == 1000
    assert repetitions(50.0, budget_ms=100, least=20, most=1000) == 20
    assert repetitions(0.5, budget_ms=100, least=20, most=1000) == 200


# ---------------------------------------------------------------------------- roofline


def test_roofline_memory_bound_elementwise():
    # relu on 64 Mi fp32: 512 MiB moved, 0 FLOPs counted, 250 us
    nbytes = 2 * 4 * (64 << 20)
    r = roofline(nbytes=nbytes, flops=0, time_ms=0.25, peak_bandwidth=4.3e12, peak_flops=5e13)
    assert r.bound == "memory-bound"
    assert r.bandwidth == pytest.approx(nbytes / 0.25e-3)
    assert r.bandwidth_fraction == pytest.approx(r.bandwidth / 4.3e12)
    assert r.floor_ms == pytest.approx(nbytes / 4.3e12 * 1e3)
    assert r.fraction == pytest.approx(r.floor_ms / 0.25)
    assert 0 < r.fraction < 1


def test_roofline_compute_bound_matmul():
    n = 4096  # bf16 matmul: 2n^3 FLOPs over 3n^2 x 2 bytes -> intensity ~1365 FLOP/B
    flops, nbytes = 2 * n**3, 3 * n * n * 2
    r = roofline(
        nbytes=nbytes,
        flops=flops,
        time_ms=0.4,
        peak_bandwidth=4.3e12,
        peak_flops=7.9e14,
        compute_roof="bf16",
    )
    assert r.bound == "compute-bound"
    assert r.intensity == pytest.approx(flops / nbytes)
    assert r.ridge == pytest.approx(7.9e14 / 4.3e12)
    assert r.flop_fraction == pytest.approx(flops / 0.4e-3 / 7.9e14)
    assert r.fraction == pytest.approx(r.flop_fraction)


def test_peaks_pick_the_compute_roof_by_dtype():
    assert H200.flops_for("torch.bfloat16") == ("bf16", 7.9e14)
    assert H200.flops_for("torch.float16") == ("bf16", 7.9e14)  # no fp16 measured: bf16's
    assert H200.flops_for("torch.float32") == ("fp32", 5.0e13)


def test_kernel_line_is_the_text_the_llm_reads():
    k = KernelTime(
        name="triton_red_fused_0", calls=1, time_us=100.0, share=0.71, bytes=int(112e6), triton=True
    )
    line = kernel_line(k, H200, bound="memory-bound")
    assert (
        line
        == "triton_red_fused_0: 71% of time, 100.0 us, 1.12 TB/s = 26% of measured peak; memory-bound"
    )
    mm = KernelTime(
        name="_matmul_kernel", calls=1, time_us=1000.0, share=1.0, bytes=1000, triton=True
    )
    text = kernel_line(mm, H200, bound="compute-bound", flops=int(4e11), compute_roof="bf16")
    assert "400.0 TFLOP/s = 51% of measured bf16 peak; compute-bound" in text


# ---------------------------------------------------------------------------- results


def _ok_verdict() -> Verdict:
    return Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message="correct on 5 trials",
        device="cuda",
        atol=1e-4,
        rtol=1e-4,
    )


def _job_data(cand_runs, eager=0.020, compiled=0.015, **extra):
    data = {
        "device": "NVIDIA H200",
        "torch_version": "2.11.0",
        "triton_version": "3.6.0",
        "peaks": {
            "device": "NVIDIA H200",
            "bandwidth": 4.3e12,
            "flops": {"fp32": 5e13, "bf16": 7.9e14},
        },
        "peaks_measured": True,
        "baselines": {"eager_samples": [eager] * 50, "compile_samples": [compiled] * 50},
        "baselines_from_cache": False,
        "candidate_samples": [[t] * 50 for t in cand_runs],
        "kernels": [
            {
                "name": "_relu_kernel",
                "calls": 1.0,
                "time_us": 4.0,
                "share": 1.0,
                "bytes": 104000,
                "triton": True,
            }
        ],
        "work": {"bytes": 104000, "flops": 0, "dtype": "torch.float32", "input_bytes": 52000},
        "fresh": {"checked": True, "ok": True, "message": ""},
        "violations": [],
        "notes": [],
    }
    data.update(extra)
    return data


def _assemble(data, baseline="eager") -> ProfileResult:
    return assemble(
        data,
        _ok_verdict(),
        ProfileOptions(baseline=baseline),
        problem="relu.py",
        kernel="relu_kernel.py",
        baseline=baseline,
    )


def test_assemble_faster_kernel_is_ok_with_both_speedups_and_feedback():
    r = _assemble(_job_data([0.010, 0.010]))
    assert r.status == "ok" and r.status in PROFILE_STATUSES
    assert r.speedup_eager.value == pytest.approx(2.0, rel=0.02)
    assert r.speedup_compile.value == pytest.approx(1.5, rel=0.02)
    assert r.candidate.n == 100  # the two agreeing sequences pooled
    assert r.roofline.bound == "memory-bound"
    text = r.feedback()
    assert text.startswith("Profile: ok. correct and 2.00x faster than eager PyTorch")
    assert (
        "_relu_kernel: 100% of time, 4.0 us, 26.0 GB/s = 1% of measured peak; memory-bound" in text
    )
    assert "Roofline, whole forward: 104.0 kB must move" in text
    assert "kernels account for 4.0 us of the 10.0 us" in text  # launch-bound hint
    json.loads(r.to_json())  # JSON-serialisable


def test_assemble_slower_against_the_chosen_baseline():
    r = _assemble(_job_data([0.018, 0.018]), baseline="compile")
    assert r.status == "slower"
    assert r.speedup_eager.value > 1 > r.speedup_compile.value
    assert "slower than torch.compile" in r.message


def test_assemble_disagreeing_sequences_are_noisy():
    r = _assemble(_job_data([0.010, 0.013, 0.016]))
    assert r.status == "noisy" and len(r.candidate_runs) == 3
    assert "disagree" in r.message


def test_assemble_rejects_stale_results_and_sandbox_violations():
    stale = _assemble(
        _job_data([0.001, 0.001], fresh={"checked": True, "ok": False, "message": "stale"})
    )
    assert stale.status == "not_verified" and stale.candidate is None
    bad = _assemble(_job_data([0.001, 0.001], violations=["opening a socket"]))
    assert bad.status == "not_verified" and "socket" in bad.message


def test_freshness_check_catches_a_result_cached_by_address():
    from tools.checks.freshness import check_freshness

    cache: dict = {}

    def cached_relu(args):
        x = args[0]
        return cache.setdefault(x.data_ptr(), torch.relu(x))

    def honest_relu(args):
        return torch.relu(args[0])

    for call, ok in ((cached_relu, False), (honest_relu, True)):
        buf = [torch.randn(64)]
        call(buf)  # the timed calls
        fresh = [torch.randn(64) + 1.0]
        got = call.__name__, check_freshness(call, buf, fresh, [torch.relu(fresh[0])], 1e-5, 1e-5)
        assert got[1]["ok"] is ok, got


def test_rescaled_problem_transforms_float_inputs():
    prob = read_problem(RELU)
    scaled = rescaled_problem(prob, "x * 100.0", "scaled x100")
    ns: dict = {}
    exec(compile(scaled.source, "p.py", "exec"), ns)
    torch.manual_seed(0)
    (x,) = ns["get_inputs"]()
    torch.manual_seed(0)
    (ref,) = ns["_ta_original_get_inputs"]()
    assert torch.equal(x, ref * 100.0)


def test_baseline_cache_round_trip(tmp_path):
    key = baseline_key("abc", "NVIDIA H200", "2.11.0")
    save_cache(
        {
            "baselines": {key: {"eager": {"median_ms": 1.0}}},
            "peaks": {"NVIDIA H200": {"bandwidth": 1}},
        }
    )
    save_cache({"baselines": {"other": {}}})
    data = load_cache()
    assert data["baselines"][key]["eager"]["median_ms"] == 1.0 and "other" in data["baselines"]
    assert data["peaks"]["NVIDIA H200"]["bandwidth"] == 1
    assert (tmp_path / "cache" / "baselines.json").exists()


# ---------------------------------------------------------------------------- API and CLI


class _SpySandbox:
    def __init__(self):
        self.calls: list[str] = []

    def run(self, fn, *args, **kwargs):
        self.calls.append(fn)
        raise AssertionError(f"nothing may run after a failed verification, got {fn}")


class _GpuVerifierSaysMismatch:
    """A verifier on a (pretend) GPU whose verdict is a mismatch."""

    device = "cuda"

    def __init__(self):
        self.sandbox = _SpySandbox()

    def verify(self, problem, source, path, triton_cache_out=None):
        return Verdict(
            status="mismatch", compiled=True, correct=False, message="wrong tail", device="cuda"
        )


def test_an_incorrect_kernel_is_never_timed():
    v = _GpuVerifierSaysMismatch()
    r = profile(RELU, "irrelevant", verifier=v)  # type: ignore[arg-type]
    assert r.status == "not_verified" and v.sandbox.calls == []
    assert r.candidate is None and r.eager is None
    assert "never timed" in r.message


def test_broken_example_kernel_is_not_verified_on_cpu(cpu_verifier):
    broken = EX / "broken" / "relu__mismatch.py"
    r = profile(RELU, read_kernel(broken), verifier=cpu_verifier, kernel_path=str(broken))
    assert r.status == "not_verified"
    assert r.verdict.status == "mismatch"
    assert r.candidate is None and r.candidate_runs == []
    assert "Verdict: mismatch" in r.feedback()


def test_cli_profile_on_cpu_is_unavailable(capsys):
    from agent.cli import main

    code = main(
        [
            "profile",
            str(RELU),
            str(EX / "kernels" / "relu.py"),
            "--json",
            "--device",
            "cpu",
            "--trials",
            "2",
        ]
    )
    out = capsys.readouterr()
    assert code == 1
    result = last_json_line(out.out)
    assert result["status"] == "unavailable"
    assert result["verdict"]["status"] == "ok"
    assert result["candidate"] is None and result["speedup_eager"] is None
    assert "no CUDA GPU" in result["message"]
    assert "unavailable" in out.err


def test_cli_profile_bad_input_exits_2(tmp_path, capsys):
    from agent.cli import main

    code = main(
        ["profile", str(tmp_path / "missing.py"), str(EX / "kernels" / "relu.py"), "--json"]
    )
    assert code == 2
    assert last_json(capsys)["status"] == "bad_input"


# ---------------------------------------------------------------------------- GPU


def _gpu_profile(kernel: Path, **kw) -> ProfileResult:
    from tools.orchestrate.verify import Verifier, VerifyOptions

    v = Verifier(VerifyOptions(device="cuda", trials=3))
    return profile(
        RELU,
        read_kernel(kernel),
        verifier=v,
        kernel_path=str(kernel),
        options=ProfileOptions(compile_baseline=False, rep_ms=30, **kw),
    )


@pytest.mark.gpu
def test_gpu_good_kernel_is_timed_with_breakdown():
    r = _gpu_profile(EX / "kernels" / "relu.py")
    assert r.status in ("ok", "slower", "noisy"), r.feedback()
    assert r.candidate.median_ms > 0 and len(r.candidate_runs) >= 2
    assert any(k.name == "_relu_kernel" and k.triton for k in r.kernels), r.kernels
    assert r.peaks.bandwidth > 1e12 and r.roofline is not None


@pytest.mark.gpu
def test_gpu_side_stream_work_is_counted():
    r = _gpu_profile(FIXTURES / "relu__side_stream.py")
    assert r.status == "slower", r.feedback()
    assert r.candidate.median_ms > 10 * r.eager.median_ms  # ~1 ms of side-stream work, counted


@pytest.mark.gpu
def test_gpu_side_stream_that_skips_the_pad_is_caught():
    r = _gpu_profile(FIXTURES / "relu__side_stream_nowait.py")
    assert r.status == "slower", r.feedback()
    assert any("side stream" in n for n in r.notes), r.notes


@pytest.mark.gpu
def test_gpu_result_cached_by_data_pointer_is_not_fast():
    r = _gpu_profile(FIXTURES / "relu__pointer_cache.py")
    assert r.status == "not_verified", r.feedback()


# --- the side-stream check of the timing (pure arithmetic; numbers from the H200 runs) -------


def _k(*us: float) -> list[dict]:
    return [{"name": f"k{i}", "time_us": t} for i, t in enumerate(us)]


@pytest.mark.parametrize(
    "runs_ms, kernels_us",
    [
        ([[0.1315] * 5, [0.1314] * 5], (127.1,)),  # ReLU 8192x8192: 127 us kernel, 131.5 us timed
        ([[0.0055] * 5, [0.0056] * 5], (1.2,)),  # tiny ReLU: launch-bound
        ([[0.0120] * 5, [0.0133] * 5], (7.4,)),  # linear+GELU
        ([[0.0101] * 5, [0.0100] * 5], (5.9, 2.0)),  # two kernels, one stream
    ],
)
def test_honest_timings_agree_with_the_profiler(runs_ms, kernels_us):
    from tools.checks.timing import uncounted_work

    assert uncounted_work(runs_ms, _k(*kernels_us)) is None


@pytest.mark.parametrize(
    "runs_ms, kernels_us",
    [
        ([[0.004] * 5, [0.004] * 5], (1000.0,)),  # ~1 ms on a side stream, caller's stream idle
        ([[0.100] * 5, [0.101] * 5], (100.0, 40.0)),  # a second kernel overlapping on a side stream
    ],
)
def test_work_the_caller_stream_did_not_wait_for_is_caught(runs_ms, kernels_us):
    from tools.checks.timing import uncounted_work

    why = uncounted_work(runs_ms, _k(*kernels_us))
    assert why is not None and "side stream" in why


def test_no_profiler_kernels_means_the_timing_is_not_trusted():
    from tools.checks.timing import uncounted_work

    assert "no GPU kernels" in uncounted_work([[0.01] * 3], [])


# --- host time and the baseline cache -------------------------------------------------------


def test_host_bound_candidate_gets_a_note_and_its_host_times():
    from tools.orchestrate.profile import host_bound_note

    data = _job_data([0.005, 0.005], candidate_host_ms=0.200)
    data["baselines"]["eager_host_ms"] = 0.012
    r = _assemble(data)
    assert r.host_ms == {"eager": 0.012, "candidate": 0.2}
    assert any(n.startswith("host-bound") for n in r.notes), r.notes
    # an honest large kernel: host time well under its GPU time
    assert host_bound_note({"candidate": 0.03, "eager": 0.01}, 0.13) is None
    # as much host work as eager: not the candidate's doing
    assert host_bound_note({"candidate": 0.03, "eager": 0.025}, 0.005) is None


def test_cached_baselines_from_another_timing_method_are_ignored():
    from tools.orchestrate.baselines import TIMING_METHOD, cached_baselines_for

    cache = {
        "baselines": {
            baseline_key("abc", "NVIDIA H200", "2.11.0"): {"eager": {"median_ms": 1.0}},
            baseline_key("abc", "H100", "2.11.0"): {"eager": {}, "method": TIMING_METHOD},
            baseline_key("abc", "A100", "2.9.0"): {"eager": {}, "method": TIMING_METHOD},
        }
    }
    assert set(cached_baselines_for(cache, "abc", "2.11.0")) == {"H100"}


def test_remembered_baselines_carry_the_method_and_host_times(tmp_path):
    from tools.core.problem import problem_from_source
    from tools.orchestrate.baselines import TIMING_METHOD, remember_baselines

    prob = problem_from_source(RELU.read_text(), str(RELU))
    data = _job_data([0.01, 0.01])
    data["baselines"].update(eager_host_ms=0.011, compile_host_ms=0.03)
    remember_baselines(data, prob, ProfileOptions())
    entry = load_cache()["baselines"][baseline_key(prob.digest, "NVIDIA H200", "2.11.0")]
    assert entry["method"] == TIMING_METHOD
    assert entry["eager_host_ms"] == 0.011 and entry["compile_host_ms"] == 0.03
