"""Issue 33, deep networks: the pieces of the harness whose cost must follow the number of
distinct kernels or layers, not the number of launches (benchmarks/depth_scaling.py), and the
probe's own tools (per-job profiles, phase timings in bench records)."""

from __future__ import annotations

import ast
import pstats

import pytest
import torch

from tests.test_aot import ADD, _import
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import JOB_PROFILE_DIR_ENV, Sandbox


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_aot_keys_each_kernel_once_however_many_launches(tmp_path, interpret, monkeypatch):
    """aot_compile_all swaps triton.language for the compiler (`compilable_language`, ~8 ms)
    once per distinct kernel and specialisation, not once per launch: 20 launches of 2 kernels
    enter it 4 times (2 keys, 2 compiles); before, 22 times (a key per launch)."""
    import tools.compile.aot as aot

    module, _ = _import(tmp_path, ADD)
    x = torch.randn(1000)
    from tools.compile.launch_record import record_launches

    with record_launches() as records:
        for _ in range(10):
            module.ModelNew()(x, x)
    assert len(records) == 20
    entered = []
    real = aot.compilable_language

    def counting(kernel=None):
        entered.append(getattr(kernel, "__name__", kernel))
        return real(kernel)

    monkeypatch.setattr(aot, "compilable_language", counting)
    aot._COMPILED.clear()
    resources, errors = aot.aot_compile_all(records, "sm_90")
    assert errors == []
    assert [r.name for r in resources] == ["add_kernel", "scale_kernel"]
    assert len(entered) == 2 * len(resources), entered


def profiled_job(n: int) -> int:
    return sum(i * i for i in range(n))


def test_job_profile_written_when_asked(tmp_path, monkeypatch):
    """TRITON_AGENT_JOB_PROFILE: each job writes cProfile's stats of its job function there
    (benchmarks/depth_scaling.py reads them); without it, nothing is written."""
    sandbox = Sandbox(device="cpu", max_workers=1, limits=Limits(timeout_s=60))
    out = sandbox.run("tests.test_depth_scaling:profiled_job", 1000)
    assert out.kind == "ok" and out.value == sum(i * i for i in range(1000))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(JOB_PROFILE_DIR_ENV, str(tmp_path))
    out = sandbox.run("tests.test_depth_scaling:profiled_job", 1000)
    assert out.kind == "ok", out.error
    files = list(tmp_path.glob("*-profiled_job.pstats"))
    assert len(files) == 1
    names = {name for (_f, _l, name) in pstats.Stats(str(files[0])).stats}  # type: ignore[attr-defined]
    assert "profiled_job" in names


def test_bench_record_phases_from_notes_and_verdict():
    from agent.bench.records import phase_seconds

    response = (
        "compiler drafter (torch.compile -> Triton)\n"
        "dynamic draft took 14.4 s: reference forward 0.2 s, Inductor 14.2 s, rewriting 0.0 s, "
        "convolution picks 3.1 s\n"
        "sized path: static draft took 5.0 s: reference forward 0.1 s, Inductor 4.0 s\n"
        "sized path took 9.5 s"
    )
    verdict = {"duration_s": 40.1, "evidence": {"timings": {"import": 1.2, "runs": 30.0}}}
    got = phase_seconds(12.5, response, verdict, {"timings": {"baselines_s": 3.0}})
    assert got == {
        "draft": 12.5,
        "draft.dynamic": 14.4,
        "draft.dynamic.reference forward": 0.2,
        "draft.dynamic.Inductor": 14.2,
        "draft.dynamic.rewriting": 0.0,
        "draft.dynamic.convolution picks": 3.1,
        "draft.sized.static": 5.0,
        "draft.sized.static.reference forward": 0.1,
        "draft.sized.static.Inductor": 4.0,
        "draft.sized": 9.5,
        "verify": 40.1,
        "candidate.import": 1.2,
        "candidate.runs": 30.0,
        "profile.baselines_s": 3.0,
    }
    assert phase_seconds(0.0, "", {}, None) == {}


def test_probe_problem_and_fit():
    from benchmarks.depth_scaling import fit_exponent, problem_source

    src = problem_source(3, residual=True)
    tree = ast.parse(src)
    assert {n.name for n in tree.body if isinstance(n, ast.ClassDef)} == {"Block", "Model"}
    ns: dict = {}
    exec(compile(src, "p.py", "exec"), ns)
    model = ns["Model"](*ns["get_init_inputs"]())
    assert len(model.blocks) == 3
    assert model(*ns["get_inputs"]()).shape == (1, 8, 8, 8)
    assert fit_exponent([(4, 1.0), (8, 2.0), (16, 4.0)]) == 1.0
    assert fit_exponent([(4, 1.0), (8, 4.0), (16, 16.0)]) == 2.0
    assert fit_exponent([(4, 1.0)]) is None


TWO_LAYERS = """

def call(args):
    x, w, b, w2, b2 = args
    buf0 = triton_convolution(x, w, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None, precision='bf16x3', X_SPLIT=True)
    ps0 = x.shape[2] * x.shape[3]
    xnumel = 20 * x.shape[0] * ps0
    del x
    buf1 = buf0
    del buf0
    triton_poi_fused_bias_relu_0[lambda meta: (triton.cdiv(xnumel, meta['XBLOCK']),)](buf1, b, xnumel, XBLOCK=64, KS0=ps0, num_warps=4, num_stages=1)
    del b
    buf2 = triton_convolution(buf1, w2, stride=(1, 1), padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), groups=1, bias=None, precision='bf16x3', X_SPLIT=True)
    del buf1
    buf3 = buf2
    del buf2
    triton_poi_fused_bias_relu_0[lambda meta: (triton.cdiv(xnumel, meta['XBLOCK']),)](buf3, b2, xnumel, XBLOCK=64, KS0=ps0, num_warps=4, num_stages=1)
    del b2
    return (buf3,)
"""


def test_one_fused_epilogue_kernel_per_pointwise_kernel():
    """Two layers whose convolutions are followed by the same Inductor kernel get one fused
    kernel, launched at both sites (before: a copy of the split GEMM per site, each compiled
    and autotuned on the GPU)."""
    from tests.test_conv_epilogue import EPILOGUE
    from tools.draft.conv_epilogue import fuse_conv_epilogues
    from tools.kernels.triton_conv import candidate_source

    source = "import torch\nimport torch.nn as nn\n\n" + candidate_source() + EPILOGUE + TWO_LAYERS
    fused, notes = fuse_conv_epilogues(source)
    ast.parse(fused)
    assert fused.count("def _conv_split_kernel_epi") == 1, notes
    assert fused.count("EPILOGUE=(_conv_split_kernel_epi0, _conv_split_kernel_epi0_tuned") == 2
    assert "triton_poi_fused_bias_relu_0[" not in fused.split("def call(")[1]
    assert sum("fused into its store" in n for n in notes) == 2


def test_launch_config_variants_share_the_drafts_autotuning(tmp_path):
    """Each launch-config variant is its own module with its own autotuners: the convolution
    library's tiles picked for the draft are given to the variant's same kernels (same name,
    source and configs), so timing a variant does not autotune every convolution shape again;
    a kernel whose source differs gets nothing."""
    from tools.draft.launch_configs import load_module, share_autotuning
    from tools.kernels.triton_conv import candidate_source

    source = "import torch\n" + candidate_source()
    base = load_module(source, str(tmp_path), "share_base")
    variant = load_module(source, str(tmp_path), "share_variant")
    config = base._conv_gemm_kernel_tuned.configs[0]
    base._conv_gemm_kernel_tuned.cache[(64, 8, "torch.float32")] = config
    assert variant._conv_gemm_kernel_tuned.cache == {}
    assert share_autotuning(base, variant) == 1
    assert variant._conv_gemm_kernel_tuned.cache == {(64, 8, "torch.float32"): config}
    assert variant._conv_split_kernel_tuned.cache == {}  # nothing tuned there in the draft
    other = load_module(
        source.replace("def _conv_gemm_kernel(", "def _conv_gemm_kernel(  # changed\n", 1),
        str(tmp_path),
        "share_other",
    )
    assert share_autotuning(base, other) == 0
