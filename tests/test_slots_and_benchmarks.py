"""Sandbox slots per GPU (one parameter, used by the Verifier, the Ray task body and the
benchmarks), and the benchmark scripts' shared helpers. GPUs are faked: no job is started."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import tools.sandboxing.sandbox
from tools.core.errors import SandboxError
from tools.sandboxing.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def two_fake_gpus(monkeypatch):
    """This process "sees" two GPUs, listed by UUID as a scheduler may list them."""
    monkeypatch.setattr(tools.sandboxing.sandbox, "count_gpus", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb")


def test_jobs_per_gpu_expands_each_gpu(two_fake_gpus):
    sb = Sandbox(device="cuda", jobs_per_gpu=3, start_method="spawn")
    assert sb.slots == 6
    assert sb._pool.devices == ["cuda:0"] * 3 + ["cuda:1"] * 3
    # the slots of one GPU are one device: an exclusive (timing) job takes all three
    shared = sb._pool.acquire()
    assert shared == [0]
    assert sb._pool.acquire(exclusive=True) == [3, 4, 5]
    sb._pool.release(shared)
    assert sb._pool.acquire(exclusive=True) == [0, 1, 2]


def test_jobs_per_gpu_default_and_explicit_gpus(two_fake_gpus):
    assert Sandbox(device="cuda", start_method="spawn")._pool.devices == ["cuda:0", "cuda:1"]
    sb = Sandbox(device="cuda", gpus=[1], jobs_per_gpu=2, start_method="spawn")
    assert sb._pool.devices == ["cuda:1", "cuda:1"]


def test_jobs_per_gpu_is_unused_on_cpu():
    assert Sandbox(device="cpu", max_workers=2, jobs_per_gpu=3).slots == 2


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_invalid_jobs_per_gpu_is_refused(bad):
    with pytest.raises(SandboxError, match="jobs_per_gpu must be"):
        Sandbox(device="cpu", jobs_per_gpu=bad)


def test_verifier_jobs_per_gpu_sets_the_slots(two_fake_gpus, monkeypatch):
    from tools.orchestrate.verify import Verifier, VerifyOptions

    monkeypatch.setattr(
        importlib.import_module("tools.orchestrate.verify_options"), "cuda_available", lambda: True
    )
    v = Verifier(VerifyOptions(device="cuda", jobs_per_gpu=4))
    assert v.sandbox._pool.devices == ["cuda:0"] * 4 + ["cuda:1"] * 4


def test_ray_task_body_honours_jobs_per_gpu_with_uuids(two_fake_gpus, monkeypatch):
    """CUDA_VISIBLE_DEVICES holding UUIDs once made evaluate_problem drop --jobs-per-gpu."""
    import agent.bench
    from tools.orchestrate.verify import Verifier, VerifyOptions

    monkeypatch.setattr(
        importlib.import_module("tools.orchestrate.verify"), "resolve_device", lambda d: "cuda"
    )
    seen = {}

    class Stop(Exception):
        pass

    real = Verifier.sandbox_factory

    def spy(**kw):
        seen["devices"] = list(real(**kw)._pool.devices)
        raise Stop

    monkeypatch.setattr(Verifier, "sandbox_factory", staticmethod(spy))
    with pytest.raises(Stop):
        agent.bench.evaluate_problem("p.py", "", [], VerifyOptions(jobs_per_gpu=3), "default")
    assert seen["devices"] == ["cuda:0"] * 3 + ["cuda:1"] * 3


# --- benchmarks/_examples.py ------------------------------------------------------------------


@pytest.fixture
def examples_module(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import _examples

    return _examples


def test_problem_for_each_example_kernel(examples_module):
    ex = examples_module
    kernels = ex.example_kernels()
    assert kernels == sorted((ex.EX / "kernels").glob("*.py")) + sorted(
        (ex.EX / "broken").glob("*.py")
    )
    for k in kernels:
        assert ex.problem_for(k).exists(), k
    problems = ex.EX / "problems"
    assert ex.problem_for("examples/kernels/relu.py") == problems / "relu.py"
    assert ex.problem_for("examples/kernels/relu_inductor_style.py") == problems / "relu.py"
    assert ex.problem_for("x/broken/mse_loss__shape_mismatch.py") == problems / "mse_loss.py"
    assert ex.expected_status("x/broken/mse_loss__shape_mismatch.py") == "shape_mismatch"
    assert ex.expected_status("examples/kernels/relu_inductor_style.py") == "ok"


# --- benchmarks/adversarial_figures.py's report (CI runs the corpus through pytest only) -----


def test_adversarial_report_lines():
    from benchmarks.adversarial_figures import Outcome, markdown, progress_line, summary

    good = Outcome(
        name="relu__x",
        expected=["cheat", "mismatch"],
        status="cheat",
        correct=False,
        message="caught",
        seconds=1.0,
    )
    bad = Outcome(
        name="relu__y", expected=["cheat"], status="ok", correct=True, message="", seconds=2.0
    )
    line = progress_line(good)
    assert line.startswith("ok  ") and "expected cheat|mismatch" in line and "got cheat" in line
    assert progress_line(bad).startswith("FAIL")
    s = summary([good, bad], "cpu", 3.0, skipped=2)
    assert (s["false_accepts"], s["harness_crashes"], s["wrong_status"]) == (1, 0, 1)
    assert "| false accepts (must be 0) | 1 |" in markdown(s)
