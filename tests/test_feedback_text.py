"""`Verdict.feedback()`: the evidence as the text a person reads and the refinement prompt
shows the model. Pinned before issue 37 moved the renderer beside `Verdict` (a type-only import
made `tools.core.results` and `tools.orchestrate.feedback` a cycle)."""

from __future__ import annotations

from tools.core.results import (
    Audit,
    Evidence,
    KernelResources,
    MismatchReport,
    SourceError,
    Verdict,
)


def _verdict(status: str, message: str, **evidence) -> Verdict:
    return Verdict(
        status=status, compiled=True, correct=False, message=message, evidence=Evidence(**evidence)
    )


def test_a_cheat_shows_the_error_the_compiler_the_audit_and_the_notes():
    v = _verdict(
        "cheat",
        "PyTorch computed inside forward.",
        error=SourceError(kind="NameError", message="name 'y' is not defined", line=7, code=" y\n"),
        aot_errors=[SourceError(kind="ptxas", message="too many resources", line=3, code="k()")],
        audit=Audit(triton_launches=2, kernels=["_k"], torch_compute_ops=["aten.relu"]),
        resources=[KernelResources(name="_k", target="cuda:90", registers=32, spills_bytes=0)],
        notes=["n1", "n2", "n3", "n4"],
    )
    assert v.feedback() == (
        "Verdict: cheat. PyTorch computed inside forward.\n"
        "Error (line 7): NameError\n"
        "    y\n"
        "name 'y' is not defined\n"
        "Real compiler error (line 3):\n"
        "    k()\n"
        "too many resources\n"
        "PyTorch ops seen inside forward: aten.relu\n"
        "Triton kernels launched: _k (2 launches)\n"
        "Compiled for cuda:90: _k: 32 regs, 0 B spilled, 0 B shared\n"
        "Note: n1\nNote: n2\nNote: n3"
    )


def test_a_mismatch_shows_its_summary_and_a_crash_its_output_trimmed():
    m = MismatchReport(
        output_index=0, trial=1, shape=[4], dtype="float32", atol=1e-4, rtol=1e-4,
        max_abs_err=1.0, mean_abs_err=0.5, max_rel_err=1.0, bad_count=2, numel=4,
        first_bad=[{"index": [3], "got": 0.0, "expected": 1.0}], hint="the tail",
    )  # fmt: skip
    assert _verdict("mismatch", "Wrong values.", mismatch=m).feedback() == (
        "Verdict: mismatch. Wrong values.\n" + m.summary()
    )
    crash = _verdict("crash", "The job died.", stderr_tail="x" * 5000).feedback()
    head, tail = crash.split("\n... [trimmed] ...\n")
    assert head == "Verdict: crash. The job died.\nLast output of the process:\n" + "x" * 580
    assert tail == "x" * 580
    wide = _verdict("shape_mismatch", "m", expected_shapes=[[2]], got_shapes=[[3]]).feedback()
    assert wide == "Verdict: shape_mismatch. m\nExpected output shapes: [[2]]; got: [[3]]"
