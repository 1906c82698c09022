"""Issue 34 on a GPU: a memo decided inside a launch (a flag on the device, a loop bound read
through a pointer) makes the same launches with the same arguments on a trial's repeated
inputs, but the launch that skips the work takes far less device time. The candidate's job
times each recorded launch with events (`tools.compile.launch_record.record_launches(device="cuda")`,
`note_launch_times`); the verdict's rule (`tools.checks.launch_times`) compares launch i of a
repeated run with the same launch's fastest fresh-input time and refuses a launch suspect in
two trials.

Without CUDA the events are stand-ins: set by the test (the rule's inputs), or the wall clock
around an interpreted launch (the candidate's job end to end: the interpreter runs the
kernel's programs inside the event window, so a skipped GEMM is a shorter window there too).
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from tests.helpers import ROOT, import_source
from tools.checks.launch_times import CONFIRMATIONS, FLOOR_MS, RATIO, faster_on_repeats
from tools.compile.launch_record import (
    _AUTOTUNING,
    DeviceHold,
    launch_trace,
    note_launch_times,
    record_launches,
)
from tools.orchestrate.reference import Reference
from tools.orchestrate.verdict_rules import TrialRun, judge
from tools.orchestrate.verify_options import VerifyOptions
from tools.sandboxing.sandbox import JobOutcome, Sandbox

# ---------------------------------------------------------------------------------------------
# The rule, on synthetic timed runs

GEMM = ("_matmul_kernel", [32, 32], "gemm-digest")
DIFF = ("_diff_kernel", [1], "diff-digest")


def _timed(trial: int, run: str, *launches: tuple[tuple, float | None]) -> dict:
    return {
        "trial": trial,
        "run": run,
        "launches": [[name, grid, digest, ms] for (name, grid, digest), ms in launches],
    }


def _trials(gemm: list[tuple[float, ...]], diff_ms: float = 1.0) -> list[dict]:
    """Trials 1, 2, ... (trial 0 is exempt: the job sends nothing for it), each a first and a
    second run and a control call (fresh values in a repeat's position) of two launches: DIFF
    (always `diff_ms`), then GEMM (first, repeated[, control] ms; the control as the first)."""
    runs = []
    for t, (first, again, *control) in enumerate(gemm, start=1):
        runs.append(_timed(t, "first", (DIFF, diff_ms), (GEMM, first)))
        runs.append(_timed(t, "second", (DIFF, diff_ms), (GEMM, again)))
        runs.append(_timed(t, "control", (DIFF, diff_ms), (GEMM, (control or [first])[0])))
    return runs


def test_honest_launches_taking_the_same_time_are_no_finding():
    assert faster_on_repeats(_trials([(1.02, 1.02)] * 4)) == ([], [])
    # a few percent either way, as a GPU measures the same kernel twice
    assert faster_on_repeats(_trials([(1.02, 0.97), (0.99, 1.05), (1.01, 0.96)])) == ([], [])


def test_noise_within_the_floor_and_small_launches_are_no_finding():
    # under half the first time, but by less than the floor: a launch this short saves nothing
    assert faster_on_repeats(_trials([(FLOOR_MS, FLOOR_MS * 0.1)] * 4)) == ([], [])
    assert faster_on_repeats(_trials([(0.0025, 0.0008)] * 4)) == ([], [])


def test_both_the_ratio_and_the_floor_must_hold():
    # 0.5 ms saved, but not under RATIO of the first time: a launch that got faster, not a skip
    assert faster_on_repeats(_trials([(1.0, RATIO * 1.0 + 1e-6)] * 3)) == ([], [])
    findings, _ = faster_on_repeats(_trials([(1.0, RATIO * 0.99)] * 3))
    assert len(findings) == 1


def test_a_first_run_slowed_by_the_machine_is_judged_against_the_fastest():
    # host delays or another process's kernels in one trial's first run (5 ms, 3 ms), never
    # in all of them: the fastest first-run time of the launch is what the repeat must undercut
    runs = _trials([(5.0, 1.0), (1.0, 1.01), (3.0, 1.0), (1.02, 0.99)])
    assert faster_on_repeats(runs) == ([], [])


def test_a_launch_far_faster_on_repeated_inputs_is_other_work():
    runs = _trials([(1.02, 0.011), (1.01, 0.0102), (1.03, 0.0104), (1.0, 0.0101)])
    findings, notes = faster_on_repeats(runs)
    assert len(findings) == 1 and notes == []
    assert findings[0].startswith(
        "trial 1, second run: launch 2 (_matmul_kernel, grid (32, 32)), same arguments, other "
        "work inside the kernel: 1.020 ms the first time"
    )
    assert "0.011 ms on the repeated inputs" in findings[0] and "4 trials" in findings[0]


def test_one_suspect_trial_is_a_note_two_are_a_finding():
    one = _trials([(1.0, 1.0), (1.0, 0.01), (1.0, 1.0)])
    findings, notes = faster_on_repeats(one)
    assert findings == [] and len(notes) == 1
    assert "trial 2, second run: launch 2 (_matmul_kernel" in notes[0]
    assert "not refused" in notes[0]
    two = _trials([(1.0, 1.0), (1.0, 0.01), (1.0, 0.01)])
    findings, notes = faster_on_repeats(two)
    assert len(findings) == 1 and notes == [] and f"{CONFIRMATIONS} trials" in findings[0]


def test_only_the_same_launch_is_compared():
    other = ("_matmul_kernel", [32, 32], "other-arguments")
    runs = []
    for t in (1, 2, 3):
        runs.append(_timed(t, "first", (DIFF, 1.0), (GEMM, 1.0)))
        runs.append(_timed(t, "second", (DIFF, 1.0), (other, 0.01)))  # not the same launch
    assert faster_on_repeats(runs) == ([], [])
    # unreadable events, a repeated run without its first run, an unannounced trial's lone run
    runs = _trials([(1.0, None), (None, 0.01)]) + [
        _timed(7, "second", (DIFF, 1.0), (GEMM, 0.01)),
        _timed(8, "first", (DIFF, 1.0), (GEMM, 0.9)),
    ]
    assert faster_on_repeats(runs) == ([], [])


def test_a_launch_faster_after_any_first_run_is_no_finding():
    # the corpus's honest spin lock on the H200 (mse_loss__spin_lock_accumulate_honest): every
    # trial's first run slow (0.165-0.18 ms), every later run fast (0.04 ms), fresh values or
    # repeated ones; the unchecked calls before the unannounced trial's run as slow as a first
    runs = _trials([(0.176, 0.040, 0.041), (0.165, 0.039, 0.040), (0.181, 0.041, 0.039)])
    runs += [
        _timed(4, "unchecked", (DIFF, 1.0), (GEMM, 0.170)),
        _timed(4, "unchecked", (DIFF, 1.0), (GEMM, 0.168)),
        _timed(4, "first", (DIFF, 1.0), (GEMM, 0.166)),
    ]
    assert faster_on_repeats(runs) == ([], [])


def test_a_memo_of_a_few_microseconds_is_other_work_in_device_time():
    # 8 us -> 4 us on repeats (the flag memo at 67x129x95 on the H200: 0.0081-0.0085 ms fresh,
    # 0.0039-0.0041 ms repeated): device times, so half a launch saved is other work
    memo = _trials([(0.0085, 0.0041), (0.0081, 0.0039), (0.0083, 0.0040, 0.0082)])
    findings, _ = faster_on_repeats(memo)
    assert len(findings) == 1 and "launch 2 (_matmul_kernel" in findings[0]
    assert "0.004 ms on the repeated inputs" in findings[0] and "3 trials" in findings[0]
    # under FLOOR_MS saved: a kernel's own variation, however small the kernel
    tiny = _trials([(0.0030, 0.0015), (0.0030, 0.0015), (0.0030, 0.0015)])
    assert tiny[1]["launches"][1][3] < RATIO * tiny[0]["launches"][1][3]
    assert faster_on_repeats(tiny) == ([], [])


def test_honest_jitter_is_no_finding():
    # the H200's figures at 67x129x95: the honest twin's GEMM 0.0107-0.0109 ms with outliers
    # up to 0.109 ms in first, repeated and control runs alike (none below the minimum): a
    # disturbed window is longer, never shorter, and the fastest fresh time stands
    twin = [(0.0109, 0.0758, 0.0769), (0.0107, 0.0107, 0.1087), (0.1087, 0.0107, 0.0107)]
    twin += [(0.0107, 0.0107, 0.0109), (0.0769, 0.0107, 0.0108)]
    assert faster_on_repeats(_trials(twin)) == ([], [])
    # one repeat far under its fresh times is one trial: a note, not a refusal
    once = [(0.0107, 0.0030), (0.0107, 0.0107), (0.0108, 0.0106)]
    findings, notes = faster_on_repeats(_trials(once))
    assert findings == [] and len(notes) == 1 and "1 trial(s) only" in notes[0]


def test_without_a_control_call_a_faster_repeat_is_a_note():
    # no fresh values timed in a repeat's position: the gain may be the position's
    runs = [r for r in _trials([(1.0, 0.01), (1.0, 0.01), (1.0, 0.01)]) if r["run"] != "control"]
    findings, notes = faster_on_repeats(runs)
    assert findings == [] and len(notes) == 1 and "no control call" in notes[0]


def _ref() -> Reference:
    return Reference(
        estimate={},
        footprint={"input_bytes": 4, "output_bytes": 4, "param_bytes": 0},
        expected=[{"shape": [1], "dtype": "torch.float32"}],
        memory={},
        timings={},
    )


def _verdict(**value):
    base = {"stage": "done", "audit": {"triton_launches": 6, "kernels": ["k"]}, "violations": []}
    ok = {"kind": "ok", "message": ""}
    run = TrialRun(
        outcome=JobOutcome(kind="ok", value={**base, **value}),
        expected_trials=3,
        runs=[["first", "second"]] * 3,
        comparisons=[(t, r, ok) for t in range(3) for r in ("first", "second")],
    )
    return judge(run, _ref(), VerifyOptions(trials=3))


def test_the_verdict_refuses_a_confirmed_launch_and_notes_an_unconfirmed_one():
    assert _verdict(launch_times=_trials([(1.0, 1.0), (1.0, 0.99)])).status == "ok"
    memo = _verdict(launch_times=_trials([(1.02, 0.011), (1.01, 0.0102)]))
    assert memo.status == "cheat" and not memo.correct
    assert "different work on repeated inputs" in memo.message
    assert "launch 2 (_matmul_kernel, grid (32, 32)), same arguments" in memo.message
    once = _verdict(launch_times=_trials([(1.0, 1.0), (1.0, 0.01)]))
    assert once.status == "ok"
    assert any("not refused" in n and "_matmul_kernel" in n for n in once.evidence.notes)


# ---------------------------------------------------------------------------------------------
# The candidate's side: events around each recorded launch

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)
"""


class StandInEvent:
    """torch.cuda.Event's part the recorder uses; its clock is the test's `LOG` position."""

    LOG: list[str] = []

    def record(self) -> None:
        self.at = len(self.LOG)
        self.LOG.append("event")

    def elapsed_time(self, end: StandInEvent) -> float:
        return float(end.at - self.at)


@pytest.fixture
def scale_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    module = import_source(tmp_path / "cand.py", KERNEL, "launch_times_kernel")
    return module.scale_kernel


def test_each_launch_is_timed_between_two_events_the_kernel_never_sees(scale_kernel):
    StandInEvent.LOG = []
    x = torch.randn(300)
    y = torch.empty_like(x)
    seen = []
    kernel_run = type(scale_kernel).run

    def logged_run(self, *args, **kwargs):  # Triton's own run: where the kernel executes
        seen.append(args)
        StandInEvent.LOG.append("launch")
        return kernel_run(self, *args, **kwargs)

    type(scale_kernel).run = logged_run
    try:
        with record_launches(event=StandInEvent) as records:
            scale_kernel[(2,)](x, y, x.numel(), 0.5, BLOCK=256)
            token = _AUTOTUNING.set(True)  # an autotuner's benchmark launch: never timed
            try:
                scale_kernel[(2,)](x, y, x.numel(), 0.5, BLOCK=256)
            finally:
                _AUTOTUNING.reset(token)
            scale_kernel[(3,)](x, y, x.numel(), 2.0, BLOCK=128)
    finally:
        type(scale_kernel).run = kernel_run
    assert torch.equal(y, x * 2.0)
    assert StandInEvent.LOG == ["event", "launch", "event", "launch", "event", "launch", "event"]
    timed, bench, other = records
    assert bench.autotuning and bench.events is None
    assert [timed.events[0].elapsed_time(timed.events[1])] == [2.0]
    # the kernel got the candidate's arguments and nothing else
    assert all(not any(isinstance(a, StandInEvent) for a in args) for args in seen)
    assert "events" not in timed.to_dict()
    result: dict = {}
    note_launch_times(result, 1, "second", records, launch_trace(records))
    ((name, grid, digest, ms), (name2, grid2, digest2, _)) = result["launch_times"][0]["launches"]
    assert (name, grid, ms) == ("scale_kernel", [2], 2.0) and grid2 == [3]
    assert digest != digest2  # other grid, other numbers: another launch
    assert result["launch_times"][0]["trial"] == 1


class StandInHold:
    """`DeviceHold`'s sleep: logs where it was enqueued (a stand-in for the device's sleep)."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def __call__(self, us: float) -> None:
        self.asked.append(us)
        StandInEvent.LOG.append("hold")


def test_the_stream_is_held_before_the_start_event_so_the_window_is_device_time(scale_kernel):
    StandInEvent.LOG = []
    sleep = StandInHold()
    x = torch.randn(300)
    with record_launches(event=StandInEvent, hold=DeviceHold(sleep, us=60_000_000)) as records:
        scale_kernel[(2,)](x, torch.empty_like(x), x.numel(), 0.5, BLOCK=256)
    # the hold first, then start event, the launch, the end event: all behind the hold
    assert StandInEvent.LOG == ["hold", "event", "event"]
    assert sleep.asked == [60_000_000] and records[0].events is not None


def test_a_launch_the_hold_did_not_cover_is_untimed_and_the_next_hold_grows(scale_kernel):
    import time

    StandInEvent.LOG = []
    kernel_run = type(scale_kernel).run

    def slow_host(self, *args, **kwargs):  # a host launch path of 20 ms (a preempted thread)
        time.sleep(0.02)
        return kernel_run(self, *args, **kwargs)

    hold = DeviceHold(StandInHold(), us=1000.0, most=1e6)
    x = torch.randn(300)
    type(scale_kernel).run = slow_host
    try:
        with record_launches(event=StandInEvent, hold=hold) as records:
            scale_kernel[(2,)](x, torch.empty_like(x), x.numel(), 0.5, BLOCK=256)
    finally:
        type(scale_kernel).run = kernel_run
    assert records[0].events is None and hold.untimed == 1  # its window held the host's path
    assert hold.us >= 1.5 * 20_000  # the next holds cover such a path
    result: dict = {}
    note_launch_times(result, 1, "first", records, launch_trace(records))
    assert result == {}  # nothing timed: nothing sent, and nothing for the rule to compare
    # a host path longer than the most a hold may last leaves the hold as it was
    capped = DeviceHold(StandInHold(), us=1000.0, most=5000.0)
    began, us = capped.start()
    time.sleep(0.01)
    assert not capped.covered(began, us) and capped.us == 1000.0


class QueriedEvent(StandInEvent):
    """An event that can say whether the stream has reached it (torch.cuda.Event.query)."""

    reached = False

    def query(self) -> bool:
        return self.reached


def test_the_start_event_says_whether_the_hold_covered_the_launch():
    import time

    hold = DeviceHold(StandInHold(), us=10.0, most=1e6)
    start = QueriedEvent()
    # a host path far longer than the hold, but the stream had not reached the start event
    # when the end event was queued (a full launch queue: the GPU was busy): device time
    began, us = hold.start()
    time.sleep(0.005)
    assert hold.covered(began, us, start) and hold.untimed == 0 and hold.us == 10.0
    # the stream had passed the start event: the window held the host's path
    start.reached = True
    began, us = hold.start()
    assert not hold.covered(began, us, start) and hold.untimed == 1


def test_the_same_launch_on_other_buffers_has_the_same_digest_and_the_cpu_sends_nothing(
    scale_kernel,
):
    digests = []
    for _ in range(2):
        x = torch.randn(300)
        with record_launches(event=StandInEvent) as records:
            scale_kernel[(2,)](x, torch.empty_like(x), x.numel(), 0.5, BLOCK=256)
        result: dict = {}
        note_launch_times(result, 1, "first", records, launch_trace(records))
        digests.append(result["launch_times"][0]["launches"][0][2])
    assert digests[0] == digests[1]
    with record_launches(device="cpu") as records:  # no events on the CPU
        scale_kernel[(2,)](x, torch.empty_like(x), x.numel(), 0.5, BLOCK=256)
    result = {}
    note_launch_times(result, 1, "first", records, launch_trace(records))
    assert records[0].events is None and result == {}


TUNED = """


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"]
)
@triton.jit
def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)
"""


@pytest.mark.gpu
def test_on_a_gpu_launches_are_timed_by_cuda_events_and_autotuning_benchmarks_are_not(tmp_path):
    import triton

    module = import_source(tmp_path / "native.py", KERNEL + TUNED, "launch_times_native")
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    module.scale_kernel[(n // 1024,)](x, y, n, 0.5, BLOCK=1024)  # compiled: a first launch
    torch.cuda.synchronize()  # compiles inside its window, longer than any hold: untimed
    with record_launches(device="cuda") as records:
        module.scale_kernel[(n // 1024,)](x, y, n, 0.5, BLOCK=1024)
        module.tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, n)
    torch.cuda.synchronize()
    bench = [r for r in records if r.autotuning]
    assert bench and all(r.events is None for r in bench)
    result: dict = {}
    note_launch_times(result, 1, "first", records, launch_trace(records))
    launches = result["launch_times"][0]["launches"]
    assert [launch[0] for launch in launches] == ["scale_kernel", "tuned_kernel"]
    assert all(launch[3] is not None and launch[3] > 0 for launch in launches), launches


# ---------------------------------------------------------------------------------------------
# The candidate's job end to end on the CPU, with wall-clock stand-in events

_JOB = """
import time
import tools.compile.launch_record as lr


class WallClockEvent:  # the interpreter runs the launch's programs between the two records
    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000.0


_record = lr.record_launches
lr.record_launches = lambda device=None: _record(device, event=WallClockEvent)
from tools.job.worker import candidate_job


class Channel:  # the parent's side: trials 0 (exempt) to 3, two runs each, then stop
    def __init__(self):
        self.replies = []
        for t in range(4):
            trial = {"trial": t, "seed": 10 + t, "scale": 1.0, "runs": ["first", "second"]}
            self.replies += [trial, {"release": True}, {"release": True}]
        self.replies.append({"stop": True})

    def send(self, msg):
        pass

    def recv(self):
        return self.replies.pop(0)


out = candidate_job(Channel(), KERNEL, "memo.py", PROBLEM, "matmul.py", seed=0)
result = {k: out.get(k) for k in ("stage", "violations", "launch_times", "error")}
"""


def _job_times(kernel: str) -> dict:
    problem = (ROOT / "examples/problems/matmul.py").read_text()
    source = f"KERNEL = {kernel!r}\nPROBLEM = {problem!r}\n" + textwrap.dedent(_JOB)
    sb = Sandbox(device="cpu", max_workers=1, start_method="spawn")
    expr = f"(lambda g: (exec({source!r}, g), g.get('result'))[1])({{}})"
    out = sb.run("builtins:eval", expr, timeout=600)
    assert out.kind == "ok", out.error + out.stderr_tail
    got = out.value
    assert got["stage"] == "done" and not got["violations"] and not got["error"], got
    return got


def test_the_candidate_job_times_the_memo_and_the_rule_refuses_it_not_its_twin():
    memo = (ROOT / "tests/adversarial/matmul__memo_device_flag.py").read_text()
    twin = memo.replace("if tl.load(flag_ptr) == 0:", "if tl.load(flag_ptr) == -123456789:")
    assert twin != memo
    got = _job_times(memo)
    runs = got["launch_times"]
    # trials 1-3 (trial 0 is exempt), a first and a second run and a control call each (fresh
    # values, in a repeat's position), three launches a run
    assert [(r["trial"], r["run"]) for r in runs] == [
        (t, r) for t in (1, 2, 3) for r in ("first", "second", "control")
    ]
    assert [launch[0] for launch in runs[0]["launches"]] == [
        "_diff_kernel",
        "_matmul_kernel",
        "_remember_kernel",
    ]
    findings, _ = faster_on_repeats(runs)
    assert findings and "launch 2 (_matmul_kernel, grid (3, 3)), same arguments" in findings[0]
    findings, _ = faster_on_repeats(_job_times(twin)["launch_times"])
    assert findings == []
