"""tools.checks.arithmetic on a real verification (CPU interpreter): the kernel names the audit saw and
the constexprs the job recorded at launch resolve a precision the source hides behind an
environment variable; what the kernel's comments claim is not read."""

from __future__ import annotations

from tests.helpers import EX
from tools.checks.arithmetic import arithmetic_of
from tools.core.problem import read_problem
from tools.core.results import Verdict
from tools.orchestrate.verify import Verifier, VerifyOptions

HIDDEN = (
    "    BLOCK_K: tl.constexpr,\n    PRECISION: tl.constexpr,\n",
    "        acc += tl.dot(a, b, input_precision=PRECISION)  # exact fp32 products\n",
    '        BLOCK_K=BLOCK_K,\n        PRECISION=os.environ.get("NOT_SET_ANYWHERE", "tf32x3"),\n',
)


def hidden_precision_matmul() -> str:
    """examples/kernels/matmul.py with its "ieee" dot turned into a constexpr whose value comes
    from an environment variable at the launch (tf32x3 unless set)."""
    src = (EX / "kernels" / "matmul.py").read_text()
    for old, new in zip(
        ("    BLOCK_K: tl.constexpr,\n", '        acc += tl.dot(a, b, input_precision="ieee")\n',
         "        BLOCK_K=BLOCK_K,\n"),
        HIDDEN,
        strict=True,
    ):  # fmt: skip
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return "import os\n" + src


def test_a_verified_kernel_is_named_by_what_it_launched():
    src = hidden_precision_matmul()
    v = Verifier(VerifyOptions(trials=1, timeout_s=120, device="cpu"))
    verdict = v.verify(read_problem(EX / "problems" / "matmul.py"), src, "hidden.py")
    assert verdict.status == "ok", verdict.feedback()
    assert verdict.evidence.audit.kernels == ["_matmul_kernel"]
    # the source alone cannot tell; the launch the job recorded can
    no_run = Verdict(status="ok", compiled=True, correct=True, message="")
    assert arithmetic_of(src, no_run) == ["unknown"]
    assert arithmetic_of(src, verdict) == ["tf32x3"]
    assert verdict.arithmetic == ["tf32x3"]  # set by the verifier
    plain = (EX / "kernels" / "matmul.py").read_text()
    assert arithmetic_of(plain, verdict) == ["fp32"]
