"""Issue 34's last three causes, piece by piece (no sandbox jobs): the work a forward call on
repeated inputs must reproduce (its launch trace), the unchecked calls before the first
unannounced trial, a library call refused in forward and the order of the judgement. The
corpus kinds that show each cause (tests/adversarial/matmul__memo_*, relu__correct_for_*,
matmul__*_hidden_*/mm_redispatch_*) go through whole verifications in tests/test_adversarial.py."""

from __future__ import annotations

import sys

import pytest
import torch

from tests.helpers import import_source
from tools.compile.launch_record import (
    LaunchRecord,
    launch_trace,
    record_launches,
    trace_difference,
    with_counts,
)
from tools.job.candidate_evidence import note_refused, work_difference
from tools.orchestrate.reference import Reference
from tools.orchestrate.verdict_rules import TrialRun, judge
from tools.orchestrate.verify_options import UNCHECKED_MAX, VerifyOptions, unchecked_calls
from tools.sandboxing.sandbox import JobOutcome

# ---------------------------------------------------------------------------------------------
# The launch trace


def _rec(name="k", *, scalars=None, shapes=None, constexprs=None, autotuning=False):
    return LaunchRecord(
        name=name,
        file="candidate.py",
        first_line=3,
        grid=(4,),
        signature={"x": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024} if constexprs is None else constexprs,
        shapes={"x": [13, 1000]} if shapes is None else shapes,
        scalars={"n": 13000} if scalars is None else scalars,
        autotuning=autotuning,
    )


def test_the_same_launches_are_the_same_work():
    first = launch_trace([_rec("checksum"), _rec("matmul")])
    again = launch_trace([_rec("checksum"), _rec("matmul")])
    assert trace_difference(first, again) is None
    assert work_difference((2, first), (2, again)) is None


def test_another_kernel_a_flag_a_shape_or_a_missing_launch_is_other_work():
    first = launch_trace([_rec("checksum"), _rec("matmul")])
    swapped = trace_difference(first, launch_trace([_rec("checksum"), _rec("copy")]))
    assert swapped and "launch 2 was matmul[" in swapped and "copy[" in swapped
    flag = trace_difference(
        launch_trace([_rec(scalars={"mode": 2})]), launch_trace([_rec(scalars={"mode": 3})])
    )
    assert flag and "mode=2" in flag and "mode=3" in flag
    assert trace_difference(
        launch_trace([_rec(shapes={"x": [67, 129]})]), launch_trace([_rec(shapes={"x": [1, 129]})])
    )
    assert trace_difference(launch_trace([_rec(constexprs={"BLOCK": 64})]), launch_trace([_rec()]))
    assert "missing: matmul" in trace_difference(first, first[:1])
    assert "extra: matmul" in trace_difference(first[:1], first)
    # launches the recorder does not see (a CompiledKernel launched directly) still count
    assert work_difference((3, first), (2, first)) == (
        "3 kernel launches the first time, 2 on the repeated inputs"
    )


def test_stochastic_numbers_and_autotuning_benchmarks_are_left_out():
    seeds = [launch_trace([_rec(scalars={"seed": s})], scalars=False) for s in (1, 2)]
    assert trace_difference(*seeds) is None
    assert launch_trace([_rec(autotuning=True), _rec()]) == launch_trace([_rec()])


def test_a_function_made_anew_each_call_is_the_same_constexpr():
    def make():
        return lambda x: x  # a new object, at a new address, every call

    a, b = make(), make()
    assert a is not b
    first = launch_trace([_rec(constexprs={"FN": a})])
    assert trace_difference(first, launch_trace([_rec(constexprs={"FN": b})])) is None


KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, alpha, mode, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha, mask=m)
"""


def test_a_real_launch_records_its_shapes_and_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    module = import_source(tmp_path / "cand.py", KERNEL, "issue34_kernel")
    x = torch.randn(3, 100)
    traces = []
    for mode in (2, 2, 3):
        y = torch.empty_like(x)
        with record_launches() as records:
            module.scale_kernel[(2,)](x, y, x.numel(), 0.5, mode, BLOCK=256)
        traces.append(launch_trace(records))
    (rec,) = records
    assert rec.shapes == {"x_ptr": [3, 100], "y_ptr": [3, 100]}
    assert rec.scalars == {"n": 300, "alpha": 0.5, "mode": 3}
    assert trace_difference(traces[0], traces[1]) is None  # other buffers, same work
    assert "mode=3" in trace_difference(traces[0], traces[2])


# ---------------------------------------------------------------------------------------------
# Unchecked calls


def test_unchecked_calls_are_at_least_one_bounded_and_memoryless():
    draws = [unchecked_calls() for _ in range(4000)]
    assert min(draws) == 1 and max(draws) <= UNCHECKED_MAX
    ones = draws.count(1) / len(draws)
    twos_of_more = draws.count(2) / max(1, sum(d >= 2 for d in draws))
    # P(n = 1) = 1/2 and, past one, half stop at each step (a 4000-draw sample: +-0.05)
    assert 0.44 < ones < 0.56 and 0.42 < twos_of_more < 0.58
    assert 1.85 < sum(draws) / len(draws) < 2.15


# ---------------------------------------------------------------------------------------------
# The judgement


def _ref() -> Reference:
    return Reference(
        estimate={},
        footprint={"input_bytes": 4, "output_bytes": 4, "param_bytes": 0},
        expected=[{"shape": [1], "dtype": "torch.float32"}],
        memory={},
        timings={},
    )


OK = {"kind": "ok", "message": ""}
RUNS = [["first", "second"], ["first"]]
COMPARED = [(0, "first", OK), (0, "second", OK), (1, "first", OK)]


def _verdict(policy: str = "strict", **value):
    base = {"stage": "done", "audit": {"triton_launches": 5, "kernels": ["k"]}, "violations": []}
    run = TrialRun(
        outcome=JobOutcome(kind="ok", value={**base, **value}),
        expected_trials=1,
        runs=RUNS,
        comparisons=[] if "error" in value else COMPARED,
    )
    return judge(run, _ref(), VerifyOptions(trials=1, policy=policy))


def test_other_work_on_repeated_inputs_is_a_cheat():
    assert _verdict().status == "ok"
    v = _verdict(repeated_work=["trial 1, second run: launch 2 was matmul[...] ..."])
    assert v.status == "cheat" and "different work on repeated inputs" in v.message
    assert "trial 1, second run" in v.message


ERROR = {"kind": "ComputeRefused", "message": "PyTorch compute refused", "line": 9, "code": "x"}
LIBRARY_AUDIT = {"triton_launches": 5, "kernels": ["k"], "library_ops": ["aten.mm"]}


@pytest.mark.parametrize("error", [None, ERROR], ids=["fell back", "raised"])
def test_a_refused_library_call_is_policy_under_strict_whatever_followed(error):
    extra = {"error": error, "error_class": "runtime_error"} if error else {}
    v = _verdict(refused_library=["aten.mm"], audit=LIBRARY_AUDIT, **extra)
    assert v.status == "policy" and "aten.mm" in v.message and not v.correct
    # without the refusal on record, the candidate's exception is the verdict (as before)
    if error:
        assert _verdict(audit=LIBRARY_AUDIT, **extra).status == "runtime_error"


def test_under_allow_library_a_refused_library_call_is_mixed():
    v = _verdict("allow-library", refused_library=["aten.mm"], audit=LIBRARY_AUDIT)
    assert v.status == "ok" and v.mixed and "aten.mm" in v.message


def test_refused_operators_are_sorted_into_library_and_compute():
    audit = {"library_ops": [], "torch_compute_ops": []}
    tamper: list[str] = []
    library: list[str] = []
    from tools.job.compute_block import is_library

    note_refused(["aten.mm.out", "aten.addmm_", "aten.relu"], audit, tamper, library, is_library)
    assert library == ["aten.mm", "aten.addmm_"] and audit["library_ops"] == library
    assert audit["torch_compute_ops"] == ["aten.relu"] and "aten.relu" in tamper[0]


def test_the_parent_draws_the_unchecked_calls_and_the_job_makes_them(monkeypatch):
    """The number of unchecked calls is drawn in the agent's process (`tools.orchestrate.verify`), out of
    the candidate's, and sent with the first unannounced trial: each one is a forward call (one
    ReLU launch) the job makes before that trial's run."""
    import sys
    from pathlib import Path

    from tools.core.problem import read_problem
    from tools.orchestrate.verify import Verifier

    verify_module = sys.modules["tools.orchestrate.verify"]  # `tools.orchestrate.verify` is also a function's name

    root = Path(__file__).resolve().parent.parent
    problem = read_problem(root / "examples/problems/relu.py")
    kernel = (root / "examples/kernels/relu.py").read_text()

    def one_unannounced(trials, plain):  # the plan without its random second one
        return [*trials, (12345, 1.0)], [["first", "second"] for _ in trials] + [["first"]]

    monkeypatch.setattr(verify_module, "with_unannounced_trials", one_unannounced)
    launches = {}
    for n in (1, 6):
        monkeypatch.setattr(verify_module, "unchecked_calls", lambda n=n: n)
        v = Verifier(VerifyOptions(trials=1, timeout_s=120, device="cpu", aot_target=None))
        verdict = v.verify(problem, kernel, "relu.py")
        assert verdict.status == "ok", verdict.message
        launches[n] = verdict.evidence.audit.triton_launches
    assert launches[6] - launches[1] == 5, launches


# ---------------------------------------------------------------------------------------------
# The work inside a launch (CPU: the interpreter's loads and stores, tools.job.interp_checks)

LOOP_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def bounded_kernel(x_ptr, y_ptr, steps_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:  # an honest early exit: programs past the end
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = (offs * 0).to(tl.float32)  # not tl.zeros: a jit function, uninterpreted in-process
    for _ in range(0, tl.load(steps_ptr)):  # a bound read on the device
        acc += tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, acc, mask=m)
"""


def _skip_unless_interpreter_runs(kernel) -> None:
    """Triton 3.6's interpreter (the H200 image's) cannot bound a loop by a loaded value
    ("only 0-dimensional arrays can be converted to Python scalars", session 16); 3.9's can."""
    from triton.runtime.errors import InterpreterError

    x = torch.ones(8)
    try:
        kernel[(1,)](x, torch.empty_like(x), torch.tensor([1], dtype=torch.int32), 8, BLOCK=8)
    except InterpreterError as e:
        import triton

        pytest.skip(f"Triton {triton.__version__}'s interpreter cannot run the loop kernel: {e}")


@pytest.fixture
def interpreted(tmp_path, monkeypatch):
    """The loop kernel, and the interpreter's builder with the race check's wrappers installed
    (restored afterwards: the builder is the process's)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    from triton.runtime.interpreter import interpreter_builder as builder

    from tools.job.interp_checks import install

    module = import_source(tmp_path / "loop.py", LOOP_KERNEL, "issue34_loop")
    _skip_unless_interpreter_runs(module.bounded_kernel)
    saved = dict(vars(builder))
    det = install(builder)
    try:
        yield module.bounded_kernel, det
    finally:
        for key in set(vars(builder)) - set(saved):
            delattr(builder, key)
        for key, value in saved.items():
            setattr(builder, key, value)
        sys.modules.pop(module.__name__, None)


def _one_forward(kernel, det, steps: int, n: int = 300):
    """One armed 'forward' of the loop kernel: its launch trace with the counts."""
    x = torch.randn(n)
    y = torch.empty_like(x)
    s = torch.tensor([steps], dtype=torch.int32)
    det.armed = True
    with record_launches() as records:
        kernel[(4,)](x, y, s, n, BLOCK=128)
    det.check()
    det.armed = False
    return with_counts(launch_trace(records), det.work)


def test_the_counts_are_the_elements_each_launch_touched(interpreted):
    kernel, det = interpreted
    _one_forward(kernel, det, steps=2)
    # 300 elements (masked-off lanes and the early-exiting fourth program excluded), twice
    # loaded, one scalar bound per running program, once stored
    assert det.work == [(2 * 300 + 3, 300, 0)]


def test_the_same_arguments_with_a_shorter_loop_are_other_work(interpreted):
    kernel, det = interpreted
    first = _one_forward(kernel, det, steps=2)
    same = _one_forward(kernel, det, steps=2)  # other buffers, other values: same counts
    assert trace_difference(first, same) is None
    skipped = _one_forward(kernel, det, steps=0)
    assert launch_trace_without_counts(first) == launch_trace_without_counts(skipped)
    diff = work_difference((1, first), (1, skipped))
    assert diff and "launch 1 (bounded_kernel, grid (4,))" in diff
    assert "603 loaded, 300 stored the first time, 3 loaded, 300 stored" in diff


def launch_trace_without_counts(trace):
    return [entry[:-1] for entry in trace]


def test_without_counts_the_trace_is_the_host_side_one():
    trace = launch_trace([_rec("checksum"), _rec("matmul")])
    assert with_counts(trace, None) == trace  # a GPU: no counts
    counted = with_counts(trace, [(10, 5, 0), (7, 7, 1)])
    assert trace_difference(counted, with_counts(trace, [(10, 5, 0), (7, 7, 1)])) is None
    diff = trace_difference(counted, with_counts(trace, [(10, 5, 0), (7, 7, 0)]))
    assert diff and "launch 2 (matmul" in diff and "7 stored, 1 atomic the first time" in diff
    # a launch the recorder did not see still has its counts compared
    more = with_counts(trace, [(10, 5, 0), (7, 7, 1), (3, 3, 0)])
    assert "extra:" in trace_difference(counted, more)
    assert trace_difference(more, with_counts(trace, [(10, 5, 0), (7, 7, 1), (4, 3, 0)]))
