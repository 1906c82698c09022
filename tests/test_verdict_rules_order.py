"""The verdict rules in their order (issue 37 pins them before `_judge_reply` is split into one
function per rule). A reply that breaks every rule at once gets the first rule's verdict; with
that rule's evidence taken away, the next rule's; and so on down to `ok`. Each step asserts the
status, whether the candidate counts as compiled, and the words that name the rule."""

from __future__ import annotations

import pytest

from tools.orchestrate.reference import Reference
from tools.orchestrate.verdict_rules import TrialRun, judge
from tools.orchestrate.verify_options import VerifyOptions
from tools.sandboxing.sandbox import JobOutcome

OK = {"kind": "ok", "message": ""}
ERROR = {"kind": "RuntimeError", "message": "boom\n(a note)", "line": 7, "code": "y = f(x)"}


def _ref() -> Reference:
    return Reference(
        estimate={},
        footprint={"input_bytes": 4, "output_bytes": 4, "param_bytes": 0},
        expected=[{"shape": [2], "dtype": "torch.float32"}],
        memory={},
        timings={},
    )


def _audit(**kw) -> dict:
    return {"triton_launches": 4, "kernels": ["_k"], **kw}


EVERY_RULE_BROKEN = {
    "stage": "done",
    "violations": ["opening a socket"],
    "refused_library": ["aten.mm"],
    "error": ERROR,
    "error_class": "runtime_error",
    "audit": _audit(
        triton_launches=0,
        torch_compute_ops=["aten.relu"],
        library_ops=["aten.mm"],
        aliased_outputs=[0],
        mutated_inputs=[0],
    ),
    "idle_runs": ["trial 0, second run"],
    "repeated_work": ["trial 0, second run: 1 kernel launch the first time, 2 on the repeated"],
    "aot_errors": [{"kind": "CompilationError", "message": "bad\nno ptx", "line": 3}],
}

# (what is taken away from the reply before this step, policy, status, compiled, words)
STEPS = [
    (None, "strict", "cheat", False, "broke the sandbox rules: opening a socket"),
    ("violations", "strict", "cheat", True, "PyTorch computed inside forward (aten.relu)"),
    ("torch compute beside the refusal", "strict", "policy", False, "refused there"),
    ("refused_library", "strict", "runtime_error", True, "raised at line 7: boom"),
    ("error", "strict", "cheat", True, "no Triton kernel was launched"),
    ("no launches", "strict", "cheat", True, "in 1 of its calls (trial 0, second run)"),
    ("idle_runs", "strict", "cheat", True, "different work on repeated inputs in 1 call(s)"),
    ("repeated_work", "strict", "cheat", True, "PyTorch computed inside forward"),
    ("torch compute", "strict", "policy", True, "library calls ran outside Triton (aten.mm)"),
    ("strict", "allow-library", "compile_error", False, "rejects it at line 3: no ptx"),
    ("aot_errors", "allow-library", "cheat", True, "output 0 aliases an input"),
    ("aliased_outputs", "allow-library", "mismatch", True, "modified input 0 in place"),
    ("mutated_inputs", "allow-library", "ok", True, "(mixed: aten.mm ran as library calls)"),
]


def _take_away(reply: dict, what: str | None) -> None:
    audit = reply["audit"]
    if what == "torch compute beside the refusal":
        audit["torch_compute_ops"] = ["aten.mm"]  # the refused call itself, no other compute
    elif what == "no launches":
        audit["triton_launches"] = 4
    elif what == "torch compute":
        audit["torch_compute_ops"] = []
    elif what in ("aliased_outputs", "mutated_inputs"):
        audit[what] = []
    elif what not in (None, "strict"):
        reply.pop(what)


def _judge(reply: dict, policy: str, comparisons=None, runs=None) -> object:
    run = TrialRun(
        outcome=JobOutcome(kind="ok", value=reply),
        expected_trials=1,
        runs=runs or [["first", "second"]],
        comparisons=[(0, "first", OK), (0, "second", OK)] if comparisons is None else comparisons,
    )
    return judge(run, _ref(), VerifyOptions(trials=1, policy=policy))


def test_each_rule_decides_before_the_rules_after_it():
    reply = {**EVERY_RULE_BROKEN, "audit": dict(EVERY_RULE_BROKEN["audit"])}
    seen = []
    for what, policy, status, compiled, words in STEPS:
        _take_away(reply, what)
        v = _judge(reply, policy)
        seen.append(v.status)
        assert (v.status, v.compiled, v.correct) == (status, compiled, status == "ok"), (what, v)
        assert words in v.message, (what, v.message)
    assert seen == [s[2] for s in STEPS]


@pytest.mark.parametrize(
    ("error_class", "fault", "status", "compiled", "words"),
    [
        ("compile_error", None, "compile_error", False, "failed to compile at line 7: boom"),
        ("bad_input", None, "bad_input", False, "is unusable at line 7: boom"),
        ("runtime_error", "an illegal memory access", "crash", True, "faulted on the GPU"),
    ],
)
def test_the_candidates_error_by_its_class(error_class, fault, status, compiled, words):
    reply = {"stage": "run", "audit": _audit(), "error": ERROR, "error_class": error_class}
    if fault:
        reply["cuda_fault"] = fault
    v = _judge(reply, "strict", comparisons=[])
    assert (v.status, v.compiled, v.correct) == (status, compiled, False)
    assert words in v.message and v.evidence.error is not None


@pytest.mark.parametrize(
    ("diff", "status", "words"),
    [
        ({"kind": "shape", "message": "returned 2 output(s)"}, "shape_mismatch", "returned 2"),
        ({"kind": "value", "message": "3 elements differ"}, "mismatch", "3 elements differ"),
        ({"kind": "handover", "message": ""}, "crash", "could not compare trial 0's second"),
        (None, "crash", "could not compare trial 0's second run"),
    ],
)
def test_the_first_run_not_ok_decides_the_comparison(diff, status, words):
    comparisons = [(0, "first", OK), (0, "second", diff), (0, "third", {"kind": "shape"})]
    v = _judge({"stage": "done", "audit": _audit()}, "strict", comparisons=comparisons)
    assert (v.status, v.compiled, v.correct, v.trials) == (status, True, False, 1)
    assert words in v.message


def test_fewer_runs_compared_than_asked_is_a_cut_short_protocol():
    v = _judge({"stage": "done", "audit": _audit()}, "strict", comparisons=[(0, "first", OK)])
    assert v.status == "cheat" and "only 1 of 2 runs reached the comparison" in v.message


def test_an_ok_verdict_says_what_it_holds_at():
    skipped = {**OK, "precision_skipped": "an fp64 run of the model needs more room"}
    v = _judge(
        {"stage": "done", "audit": _audit()}, "strict", [(0, "first", OK), (0, "x", skipped)]
    )
    assert v.status == "ok" and not v.mixed
    assert v.message.startswith("correct on 1 trials (4 Triton launches, kernels: _k)")
    assert v.evidence.notes == ["an fp64 run of the model needs more room"]
    assert v.evidence.expected_shapes == [[2]] and v.atol is not None
