"""`--precision fp32|bf16|fp16` (issue 36), with KernelBench's meaning: the model's floating
parameters and buffers and its floating inputs cast to that dtype, for the reference and the
candidate alike, compared at KernelBench's tolerance for it (1e-2 at bf16 and fp16).

On the CPU the interpreter runs fp16 arithmetic but not bf16: fp16 is verified end to end with
real kernels (one correct in fp16, the same one refused at fp32 for its fp16 arithmetic, a wrong
one); bf16 with a stand-in that needs no bf16 arithmetic (a ReLU on the bf16 bit patterns as
int16: the sign bit decides), so the cast, the reference at bf16 and the tolerance are exercised
up to the point where a bf16 kernel would compute. No verdict or timing is hard-coded: each
kernel's status comes from the verifier."""

from __future__ import annotations

import textwrap

import pytest
import torch

from tools.core.problem_dtype import (
    PRECISION_ENV,
    cache_suffix,
    cast_floating,
    cast_model,
    precision_env,
    torch_dtype,
)
from tools.orchestrate.verify import Verifier, VerifyOptions

CPU = dict(device="cpu", aot_target=None, trials=2, timeout_s=240.0)

# x * weight + bias, with an integer buffer the cast must leave alone
AFFINE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n))
            self.bias = nn.Parameter(torch.randn(n))
            self.register_buffer("steps", torch.arange(n))

        def forward(self, x):
            return x * self.weight + self.bias

    def get_inputs():
        return [torch.randn(37, 333)]

    def get_init_inputs():
        return [333]
    """
)

AFFINE_KERNEL = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def _affine_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        w = tl.load(w_ptr + offs % cols, mask=mask)
        b = tl.load(b_ptr + offs % cols, mask=mask)
        y = MATH
        tl.store(y_ptr + offs, y, mask=mask)

    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n))
            self.bias = nn.Parameter(torch.randn(n))
            self.register_buffer("steps", torch.arange(n))

        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            _affine_kernel[(triton.cdiv(n, 1024),)](
                x, self.weight, self.bias, y, n, x.shape[-1], BLOCK=1024
            )
            return y
    """
)
FP32_MATH = "x.to(tl.float32) * w.to(tl.float32) + b.to(tl.float32)"
"""Loads in the problem's dtype, arithmetic and accumulation in fp32, stored in the output's."""
FP16_MATH = "x.to(tl.float16) * w.to(tl.float16) + b.to(tl.float16)"
"""fp16 arithmetic: right for an fp16 problem, lower precision for an fp32 one."""
WRONG_MATH = "x.to(tl.float32) * w.to(tl.float32)"
"""The bias left out."""

RELU = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)

    def get_inputs():
        return [torch.randn(29, 111)]

    def get_init_inputs():
        return []
    """
)

RELU_BITS = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def _relu_bits_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        # a 16-bit float is negative where its int16 bit pattern is: no float arithmetic
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, RESULT, mask=mask)

    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            _relu_bits_kernel[(triton.cdiv(n, 1024),)](
                x.view(torch.int16), y.view(torch.int16), n, BLOCK=1024
            )
            return y
    """
)
RELU_RESULT = "tl.where(v < 0, 0, v)"
IDENTITY_RESULT = "v"
"""Wrong: the negative values kept."""


def _problem(tmp_path, source: str, name: str):
    from tools.core.problem import read_problem

    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return read_problem(path)


@pytest.fixture(scope="module")
def verifiers():
    """One verifier per precision, shared by the module's verifications (their problem checks
    and workers)."""
    made = {p: Verifier(VerifyOptions(precision=p, **CPU)) for p in ("fp32", "bf16", "fp16")}
    return made


# -- the casts (in process: tools.core.problem_dtype) -------------------------------------------


def test_only_floating_tensors_are_cast():
    ints = torch.arange(4)
    out = cast_floating([torch.randn(3), ints, 2.5, torch.zeros(2, dtype=torch.float64)],
                        torch.bfloat16)  # fmt: skip
    assert out[0].dtype == torch.bfloat16 and out[3].dtype == torch.bfloat16
    assert out[1] is ints and out[2] == 2.5  # KernelBench would cast the integers too
    assert cast_floating([ints, torch.randn(2)], None)[1].dtype == torch.float32  # fp32: as written


def test_the_model_is_cast_like_kernelbenchs_to_dtype():
    model = torch.nn.Linear(3, 2)
    model.register_buffer("count", torch.tensor(3))
    cast_model(model, torch.float16)
    assert model.weight.dtype == torch.float16 and model.count.dtype == torch.int64


def test_fp32_runs_the_problem_as_written():
    assert (
        torch_dtype("fp32") is None and precision_env("fp32") == {} and cache_suffix("fp32") == ""
    )
    assert torch_dtype("bf16") is torch.bfloat16 and torch_dtype("fp16") is torch.float16
    assert precision_env("bf16") == {PRECISION_ENV: "bf16"} and cache_suffix("fp16") == "@fp16"


def test_an_unknown_precision_is_bad_input():
    from tools.core.errors import BadInputError

    with pytest.raises(BadInputError, match="one of fp32, bf16, fp16"):
        VerifyOptions(precision="fp8")


def test_bf16_and_fp16_have_no_scale_trial():
    """KernelBench's 1e-2 at the reference's own dtype: no x100 trial (an honest kernel that
    rounds intermediates where eager does not is outside it there); fp32 keeps its own."""
    assert VerifyOptions(precision="bf16").scale_trials() == ()
    assert VerifyOptions(precision="fp16").scale_trials() == ()
    assert VerifyOptions(precision="fp32").scale_trials() != ()


def test_the_loaded_problem_is_cast_in_a_job(monkeypatch, tmp_path):
    """The jobs' own loading (`tools.job.job_common`), at the precision of their environment: bf16
    model and inputs, the integer buffer kept, the weights the fp32 draws rounded."""
    from tools.job.job_common import build_model, load_problem, make_inputs

    monkeypatch.setenv(PRECISION_ENV, "bf16")
    mod = load_problem(AFFINE, str(tmp_path / "affine.py"))
    model, _ = build_model(mod, 7, "cpu")
    (x,) = make_inputs(mod, 11, "cpu")
    assert x.dtype == torch.bfloat16 and model.weight.dtype == torch.bfloat16
    assert model.steps.dtype == torch.int64
    monkeypatch.delenv(PRECISION_ENV)
    fp32_model, _ = build_model(load_problem(AFFINE, str(tmp_path / "affine.py")), 7, "cpu")
    assert torch.equal(model.weight, fp32_model.weight.to(torch.bfloat16))


# -- verifications (sandboxed jobs, CPU interpreter) -----------------------------------------


def test_a_kernel_correct_in_fp16_is_accepted_at_fp16(tmp_path, verifiers):
    problem = _problem(tmp_path, AFFINE, "affine")
    for math in (FP32_MATH, FP16_MATH):
        verdict = verifiers["fp16"].verify(problem, AFFINE_KERNEL.replace("MATH", math))
        assert verdict.status == "ok", (math, verdict.message)
        assert verdict.precision == "fp16" and "at fp16" in verdict.message
        assert (verdict.atol, verdict.rtol) == (1e-2, 1e-2)  # KernelBench's for fp16
        # the judge's reference and the candidate's inputs are fp16: 2 bytes an element
        assert verdict.evidence.footprint["input_bytes"] == 37 * 333 * 2


def test_fp16_arithmetic_is_refused_where_fp32_is_required(tmp_path, verifiers):
    problem = _problem(tmp_path, AFFINE, "affine")
    verdict = verifiers["fp32"].verify(problem, AFFINE_KERNEL.replace("MATH", FP16_MATH))
    assert verdict.status == "mismatch", verdict.message
    assert verdict.precision == "fp32" and "fp16" in verdict.arithmetic
    honest = verifiers["fp32"].verify(problem, AFFINE_KERNEL.replace("MATH", FP32_MATH))
    assert honest.status == "ok", honest.message


def test_a_wrong_kernel_is_refused_at_fp16(tmp_path, verifiers):
    problem = _problem(tmp_path, AFFINE, "affine")
    verdict = verifiers["fp16"].verify(problem, AFFINE_KERNEL.replace("MATH", WRONG_MATH))
    assert verdict.status == "mismatch" and verdict.precision == "fp16", verdict.message


def test_bf16_stand_in_accepted_and_a_wrong_one_refused(tmp_path, verifiers):
    """bf16 up to where the interpreter would need bf16 arithmetic: the reference at bf16, the
    candidate's input a bf16 tensor (its int16 view is what the kernel reads), the tolerance
    bf16's; the same kernel leaving negatives in place is a mismatch."""
    problem = _problem(tmp_path, RELU, "relu_bf16")
    verdict = verifiers["bf16"].verify(problem, RELU_BITS.replace("RESULT", RELU_RESULT))
    assert verdict.status == "ok", verdict.message
    assert verdict.precision == "bf16" and (verdict.atol, verdict.rtol) == (1e-2, 1e-2)
    assert verdict.evidence.footprint["input_bytes"] == 29 * 111 * 2
    wrong = verifiers["bf16"].verify(problem, RELU_BITS.replace("RESULT", IDENTITY_RESULT))
    assert wrong.status == "mismatch", wrong.message


def test_the_bf16_stand_in_is_no_fp32_kernel(tmp_path, verifiers):
    """The stand-in reads 16-bit patterns: at fp32 its input has no int16 view of that shape,
    so the precision really reached the candidate's job above (not a kernel that passes at any
    dtype)."""
    problem = _problem(tmp_path, RELU, "relu_fp32")
    verdict = verifiers["fp32"].verify(problem, RELU_BITS.replace("RESULT", RELU_RESULT))
    assert not verdict.correct, verdict.message


def test_the_candidates_model_is_cast_like_the_reference(monkeypatch):
    """KernelBench's `custom_model.to(dtype=precision)`: in every job that builds a candidate's
    model (`_copy_matching_weights`, after its move to the device), its floating parameters and
    buffers at the job's precision, the reference's weights copied in exactly."""
    from tools.job.job_common import _copy_matching_weights

    monkeypatch.setenv(PRECISION_ENV, "fp16")
    reference = cast_model(torch.nn.Linear(5, 3), torch.float16)
    candidate = torch.nn.Linear(5, 3)
    candidate.register_buffer("extra", torch.ones(2))
    _copy_matching_weights(reference, candidate)
    assert candidate.weight.dtype == torch.float16 and candidate.extra.dtype == torch.float16
    assert torch.equal(candidate.weight, reference.weight)
