"""tools/checks/arithmetic: the arithmetic a kernel computes in, read from its source (precision
choices hidden behind variables, constexprs, branches, helpers, casts, hand splits) and from its
compiled TTIR (a real sm_90 compile, no GPU needed)."""

from __future__ import annotations

import textwrap

import pytest

from tools.checks.arithmetic import (
    FP32_CONTRACT,
    arithmetic_of,
    from_cache_dir,
    from_source,
    from_ttir,
    outside_fp32_contract,
)
from tools.core.results import Audit, Evidence, KernelResources, Verdict

HEAD = "import os\nimport torch\nimport triton\nimport triton.language as tl\n\n"

TILE = """
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
"""
STORE = "    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)\n"


def kernel(body: str, params: str = "", name: str = "k", host: str = "") -> str:
    """A candidate file: one `@triton.jit` kernel over 16x16 tiles, then `host` code."""
    sig = "a_ptr, b_ptr, c_ptr" + (", " + params if params else "")
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return HEAD + f"@triton.jit\ndef {name}({sig}):{TILE}{body}\n{STORE}\n" + textwrap.dedent(host)


def names(source: str, kernels=None, constexprs=None) -> list[str]:
    found = from_source(source, kernels, constexprs)
    total = next(iter(found.values()))
    for f in list(found.values())[1:]:
        total.update(f)
    return total.names()


# ---------------------------------------------------------------------------------------------
# Literal choices


@pytest.mark.parametrize(
    "body, expected",
    [
        ("c = a * b + 1.0", ["fp32"]),
        ("c = tl.dot(a, b)", ["tf32"]),  # Triton's default on fp32 data
        ("c = tl.dot(a, b, allow_tf32=False)", ["fp32"]),
        ("c = tl.dot(a, b, allow_tf32=True)", ["tf32"]),
        ("c = tl.dot(a, b, input_precision='ieee')", ["fp32"]),
        ("c = tl.dot(a, b, input_precision='tf32x3')", ["tf32x3"]),
        ("c = tl.dot(a, b, None, 'tf32x3')", ["tf32x3"]),  # positional
        ("c = tl.dot(a, b, input_precision='bf16x3')", ["bf16x3"]),
        ("c = tl.dot(a, b, input_precision='TF32')", ["tf32"]),
        ("c = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))", ["bf16"]),
        ("c = tl.dot(a.to(tl.float16), b.to(tl.float16), input_precision='ieee')", ["fp16"]),
        ("c = tl.dot(a.to(tl.float8e4nv), b.to(tl.float8e4nv))", ["fp8"]),
        ("s = tl.sum(a.to(tl.float16), axis=1)\nc = a + s[:, None]", ["fp16"]),
        ("acc = tl.zeros((16, 16), dtype=tl.bfloat16)\nc = acc + a", ["bf16"]),
        ("c = tl.cast(a, tl.bfloat16) + b", ["bf16"]),
        ("c = a.to(tl.float64) * b", ["fp64"]),
        ("c = (a.to(tl.int32, bitcast=True) & -256).to(tl.float32, bitcast=True)", ["reduced"]),
        ("c = (a.to(tl.int32, bitcast=True) & 0xFFFF0000).to(tl.float32, bitcast=True)", ["bf16"]),
    ],
)
def test_literal_choices(body, expected):
    assert names(kernel(body)) == expected


def test_a_mix_is_listed_in_table_order():
    body = "c = tl.dot(a, b, input_precision='bf16x3') + tl.dot(a, b, input_precision='ieee')"
    assert names(kernel(body)) == ["fp32", "bf16x3"]


# ---------------------------------------------------------------------------------------------
# Choices hidden behind names: the value is followed, what the names say is not read


def test_a_module_constant_named_to_mislead():
    src = kernel("c = tl.dot(a, b, input_precision=FP32_EXACT)")
    assert names(src.replace("@triton.jit", "FP32_EXACT = 'tf32'  # full fp32\n\n@triton.jit")) == [
        "tf32"
    ]


def test_a_local_variable_and_a_lookup_table():
    src = kernel("p = MODES[1]\nc = tl.dot(a, b, input_precision=p)")
    src = src.replace("@triton.jit", "MODES = ('ieee', 'tf32')\n\n@triton.jit")
    assert names(src) == ["tf32"]


def test_a_constexpr_set_at_the_launch_not_its_default():
    src = kernel(
        "c = tl.dot(a, b, input_precision=PRECISION)",
        "PRECISION: tl.constexpr = 'ieee'",
        host="""
        def launch(a, b, c):
            mode = "tf32"
            k[(1,)](a, b, c, PRECISION=mode)
        """,
    )
    assert names(src) == ["tf32"]


def test_a_constexpr_through_the_host_function_and_its_callers():
    src = kernel(
        "c = tl.dot(a, b, input_precision=P)",
        "P: tl.constexpr",
        host="""
        def matmul(a, b, c, precision=None):
            k[(1,)](a, b, c, precision or "tf32x3")

        def forward(a, b, c):
            matmul(a, b, c, precision="bf16x3")
        """,
    )
    assert names(src) == ["bf16x3"]  # the one call passes a value: the fallback never runs
    # every value the code can reach: a call without it gets the fallback
    assert names(src + "    matmul(a, b, c)\n") == ["tf32x3", "bf16x3"]


def test_a_precision_computed_at_run_time_is_unknown_not_fp32():
    src = kernel(
        "c = tl.dot(a, b, input_precision=P)",
        "P: tl.constexpr",
        host="""
        def launch(a, b, c):
            k[(1,)](a, b, c, P=os.environ.get("MY_PRECISION", "ieee"))
        """,
    )
    assert names(src) == ["unknown"]
    # the value the job recorded at the launch resolves it
    assert names(src, ["k"], {"k": [{"P": "tf32"}]}) == ["tf32"]


def test_constexpr_branches_are_pruned_by_the_recorded_values():
    src = kernel(
        """
        if FAST:
            c = tl.dot(a, b, input_precision="tf32")
        else:
            c = tl.dot(a, b, input_precision="ieee")
        """,
        "FAST: tl.constexpr",
    )
    assert names(src) == ["fp32", "tf32"]  # not known: both branches
    assert names(src, ["k"], {"k": [{"FAST": False}]}) == ["fp32"]
    assert names(src, ["k"], {"k": [{"FAST": True}]}) == ["tf32"]
    assert names(src, ["k"], {"k": [{"FAST": True}, {"FAST": False}]}) == ["fp32", "tf32"]


def test_a_helper_gets_the_kernels_constexpr():
    src = kernel("c = _mm(a, b, PRECISION)", "PRECISION: tl.constexpr")
    src = src.replace(
        "@triton.jit\ndef k",
        "@triton.jit\ndef _mm(x, y, P: tl.constexpr):\n"
        "    return tl.dot(x, y, input_precision=P)\n\n\n@triton.jit\ndef k",
    )
    assert list(from_source(src)) == ["k"]  # the helper is not a kernel of its own
    assert names(src, ["k"], {"k": [{"PRECISION": "tf32x3"}]}) == ["tf32x3"]


def test_the_default_precision_set_through_the_environment():
    src = kernel("c = tl.dot(a, b)")
    ieee = src.replace("import os\n", "import os\nos.environ['TRITON_F32_DEFAULT'] = 'ieee'\n")
    assert names(ieee) == ["fp32", "tf32"]  # set at import: kernels compiled before keep TF32
    hidden = src.replace(
        "import os\n", "import os\nos.environ['TRITON_F32_DEFAULT'] = os.environ['X']\n"
    )
    assert names(hidden) == ["unknown"]


def test_only_launched_kernels_count():
    src = kernel("c = a + b") + kernel("c = tl.dot(a, b)", name="unused")[len(HEAD) :]
    assert names(src, ["k"]) == ["fp32"]
    assert names(src) == ["fp32", "tf32"]  # no launch known: every kernel


# ---------------------------------------------------------------------------------------------
# Splits by hand: a rounding with its residual


def test_a_bf16x3_split_by_hand():
    body = """
    a_hi = a.to(tl.bfloat16)
    a_lo = (a - a_hi.to(tl.float32)).to(tl.bfloat16)
    b_hi = b.to(tl.bfloat16)
    b_lo = (b - b_hi.to(tl.float32)).to(tl.bfloat16)
    c = tl.dot(a_hi, b_lo)
    c = tl.dot(a_lo, b_hi, c)
    c = tl.dot(a_hi, b_hi, c)
    """
    assert names(kernel(body)) == ["bf16x3"]
    # the same without the residual is plain bf16
    plain = "a_hi = a.to(tl.bfloat16)\nb_hi = b.to(tl.bfloat16)\nc = tl.dot(a_hi, b_hi)"
    assert names(kernel(plain)) == ["bf16"]


def test_a_tf32x3_split_by_mask():
    body = """
    a_hi = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    a_lo = a - a_hi
    c = tl.dot(a_lo, b, input_precision="tf32")
    c = tl.dot(a_hi, b, c, input_precision="tf32")
    """
    assert names(kernel(body)) == ["tf32x3"]


def test_the_project_convolutions():
    from tools.kernels import triton_conv

    src = triton_conv.candidate_source()
    gemm = "_conv_gemm_kernel"
    assert names(src, [gemm], {gemm: [{"PRECISION": "bf16x3", "SPLIT_W": False}]}) == ["bf16x3"]
    assert names(src, [gemm], {gemm: [{"PRECISION": "tf32x3", "SPLIT_W": True}]}) == ["tf32x3"]
    assert names(src, [gemm], {gemm: [{"PRECISION": "ieee", "SPLIT_W": False}]}) == ["fp32"]
    # X_SPLIT: the operands split into bf16 parts in one kernel, multiplied in another
    split = {"EXACT": False, "PART_SUM": False, "CARRIER_FP32": True}
    kernels = ["_conv_split_input_kernel", "_conv_split_weight_kernel", "_conv_split_kernel"]
    found = from_source(src, kernels, {"_conv_split_kernel": [split]})
    assert found["_conv_split_input_kernel"].names() == ["bf16x3"]
    assert found["_conv_split_kernel"].names() == ["fp32"]  # exact products of bf16 parts
    assert names(src, ["_conv_direct2d_kernel"]) == ["fp32"]


def test_the_fp32_contract():
    assert {"fp32", "tf32x3", "bf16x3"} <= FP32_CONTRACT
    assert not {"tf32", "bf16", "fp16", "fp8", "reduced"} & FP32_CONTRACT
    assert outside_fp32_contract(["bf16", "fp32", "tf32", "unknown"]) == ["tf32", "bf16"]


def test_a_file_that_does_not_parse():
    assert from_source("def broken(:\n") == {}


# ---------------------------------------------------------------------------------------------
# The compiled kernel


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """TTIR of three kernels compiled for sm_90 (no GPU needed), in a Triton cache."""
    import os

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    cache = tmp_path_factory.mktemp("triton_cache")
    path = tmp_path_factory.mktemp("src") / "kernels.py"
    body_split = """
    bits = a.to(tl.int32, bitcast=True)
    a_hi = (bits & -65536).to(tl.float32, bitcast=True)
    a_lo = (a - a_hi).to(tl.bfloat16)
    bh = b.to(tl.bfloat16)
    c = tl.dot(a_hi.to(tl.bfloat16), bh)
    c = tl.dot(a_lo, bh, c)
    """
    path.write_text(
        kernel("c = tl.dot(a, b, input_precision=P)", "P: tl.constexpr", name="chosen")
        + kernel(body_split, name="split")[len(HEAD) :]
    )
    import importlib.util

    spec = importlib.util.spec_from_file_location("arith_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    target = GPUTarget("cuda", 90, 32)
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(cache)
    try:
        out = {}
        for p in ("tf32", "bf16x3"):
            src = ASTSource(
                fn=module.chosen, signature={**sig, "P": "constexpr"}, constexprs={(3,): p}
            )
            out[p] = triton.compile(src, target=target).asm["ttir"]
        out["split"] = triton.compile(ASTSource(fn=module.split, signature=sig), target=target)
        out["split"] = out["split"].asm["ttir"]
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved
    return out, str(cache), path.read_text()


def test_ttir_dot_precisions(compiled):
    ttir, _, _ = compiled
    assert from_ttir(ttir["tf32"]).names() == ["tf32"]
    assert from_ttir(ttir["bf16x3"]).names() == ["bf16x3"]
    assert from_ttir(ttir["split"]).names() == ["bf16x3"]  # bf16 dots, rounding and residual
    assert from_ttir("%c = tt.dot %a, %b, %z : tensor<16x16xf32> * tensor<16x16xf32>").names() == [
        "fp32"
    ]  # no inputPrecision: ieee


def test_the_compiled_kernel_wins_over_the_source(compiled):
    """The source can only say "some value at run time"; the cache shows what was compiled."""
    _, cache, source = compiled
    assert {k: v.names() for k, v in from_cache_dir(cache).items()} == {
        "chosen": ["bf16x3", "tf32"],
        "split": ["bf16x3"],
    }
    verdict = Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message="",
        evidence=Evidence(audit=Audit(triton_launches=2, kernels=["chosen"])),
    )
    assert arithmetic_of(source, verdict) == ["unknown"]  # P has no call site in the file
    assert arithmetic_of(source, verdict, cache) == ["bf16x3", "tf32"]


def test_arithmetic_of_uses_the_recorded_constexprs():
    src = kernel("c = tl.dot(a, b, input_precision=P)", "P: tl.constexpr")
    res = [KernelResources(name="k", target="sm_90", constexprs={"P": "tf32x3"})]
    verdict = Verdict(
        status="ok",
        compiled=True,
        correct=True,
        message="",
        evidence=Evidence(audit=Audit(kernels=["k"]), resources=res),
    )
    assert arithmetic_of(src, verdict) == ["tf32x3"]
    assert arithmetic_of("def broken(:\n", verdict) == []


def test_the_verdict_field_round_trips():
    v = Verdict(status="ok", compiled=True, correct=True, message="", arithmetic=["fp32", "bf16x3"])
    assert Verdict.from_dict(v.to_dict()).arithmetic == ["fp32", "bf16x3"]
    assert '"arithmetic": ["fp32", "bf16x3"]' in v.to_json()


def test_an_index_mask_is_no_rounding():
    body = "c = tl.load(a_ptr + (r[:, None] * 16 + r[None, :]) & -256)"
    assert names(kernel(body)) == ["fp32"]
    assert from_ttir(
        "%c = arith.constant dense<-256> : tensor<16xi32>\n"
        "%i = arith.andi %r, %c : tensor<16xi32>\n"
    ).names() == ["fp32"]


def test_the_mcp_verify_schema_carries_the_field():
    from pydantic import TypeAdapter

    from agent.mcp_models import OUTPUT_MODELS

    field = TypeAdapter(OUTPUT_MODELS["verify"]).json_schema()["properties"]["arithmetic"]
    assert field["type"] == "array" and field["items"] == {"type": "string"}


def test_a_failing_reading_never_fails_the_verification():
    class Broken:
        evidence = None  # no `.audit`: the reading raises inside

    assert arithmetic_of("x = 1\n", Broken()) == ["unknown"]


def test_inline_assembly():
    split = """
    a_hi = tl.inline_asm_elementwise(
        "cvt.rna.tf32.f32 $0, $1;", "=r,r", [a], dtype=tl.float32, is_pure=True, pack=1
    )
    a_lo = a - a_hi
    c = tl.dot(a_lo, b, input_precision="tf32") + tl.dot(a_hi, b, input_precision="tf32")
    """
    assert names(kernel(split)) == ["tf32x3"]
    approx = """
    c = tl.inline_asm_elementwise(
        "ex2.approx.f32 $0, $1;", "=r,r", [a], dtype=tl.float32, is_pure=True, pack=1
    )
    """
    assert names(kernel(approx)) == ["unknown"]  # assembly can compute in anything
    ttir = (
        '%h = tt.elementwise_inline_asm "cvt.rna.tf32.f32 $0, $1;" {constraints = "=r,r", '
        "packed_element = 1 : i32, pure = true} %a : tensor<16x16xf32> -> tensor<16x16xf32>\n"
        "%l = arith.subf %a, %h : tensor<16x16xf32>\n"
        "%c = tt.dot %l, %b, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> "
        "-> tensor<16x16xf32>\n"
    )
    assert from_ttir(ttir).names() == ["tf32x3"]


def test_aliases_of_dot_and_of_dtypes():
    aliased = kernel("c = mm(a, b)").replace("@triton.jit", "mm = tl.dot\n\n@triton.jit")
    assert names(aliased) == ["tf32"]
    imported = kernel("c = mm(a, b, input_precision='tf32x3')").replace(
        "import os\n", "import os\nfrom triton.language import dot as mm\n"
    )
    assert names(imported) == ["tf32x3"]
    computed = kernel("c = mm(a, b)").replace(
        "@triton.jit", "mm = getattr(tl, 'do' + 't')\n\n@triton.jit"
    )
    assert names(computed) == ["unknown"]  # not fp32
    bf = kernel("c = tl.dot(a.to(BF), b.to(BF))").replace(
        "@triton.jit", "BF = tl.bfloat16\n\n@triton.jit"
    )
    assert names(bf) == ["bf16"]
    hidden = kernel("c = a.to(DT) + b", "DT: tl.constexpr")
    assert names(hidden) == ["unknown"]  # no launch, no default: not known
    assert names(hidden, ["k"], {"k": [{"DT": "fp16"}]}) == ["fp16"]  # as the job records it
    assert names(kernel("c = (a * b).to(c_ptr.dtype.element_ty)")) == ["fp32"]  # the data's own
