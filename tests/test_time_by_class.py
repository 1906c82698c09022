"""Where a whole network's time goes (issue 33): each GPU kernel's time per class of layer, the
candidate's beside eager's and torch.compile's (`tools.checks.time_by_class`), in the profile's text
and JSON. Kernel names are the ones the H200 runs show (cuDNN, cuBLAS, ATen, Inductor's and this
project's Triton kernels). Pure: no GPU."""

from __future__ import annotations

import json

import pytest

from tests.test_profile import _assemble, _job_data
from tools.checks.time_by_class import class_lines, kernel_class, slowest_class, time_by_class

NAMES = {
    # this project's and Inductor's Triton kernels
    "_conv_gemm_kernel": "convolution",
    "_conv_pack_kernel": "convolution",
    "_gemm_kernel": "GEMM",
    "_rnn_recurrence_kernel": "recurrent",
    "_attention_kernel": "attention",
    "triton_tem_fused_mm_0": "GEMM",
    "triton_poi_fused__native_batch_norm_legit_functional_convolution_relu_2_sized": "pointwise",
    "triton_red_fused__native_batch_norm_legit_functional_0_sized": "normalization",
    "triton_per_fused__softmax_3": "softmax",
    "triton_poi_fused_avg_pool2d_3_sized": "pooling",
    "triton_poi_fused_cat_0": "copy/layout",
    "triton_poi_fused_add_copy__4": "pointwise",
    "triton_red_fused_mean_5": "reduction",
    # cuDNN, cuBLAS, ATen
    "sm90_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
    "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cudnn": "convolution",
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, "
    "false, true>()": "convolution",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas": "GEMM",
    "ampere_sgemm_128x64_tn": "GEMM",
    "nvjet_tst_128x64_64x8_1x1_v_bz_TNN": "GEMM",
    "void at::native::(anonymous namespace)::batch_norm_collect_statistics_kernel<float, float, "
    "float, 512, int>(...)": "normalization",
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(...)>": "pointwise",
    "void at::native::(anonymous namespace)::avg_pool2d_out_cuda_frame<float, float>(...)": "pooling",
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<>": "copy/layout",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>": "softmax",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ...>>": "reduction",
    "void pytorch_flash::flash_fwd_kernel<...>": "attention",
    "RNN_blockPersist_fp_LSTM<float, float, float, 128, 1, true>": "recurrent",
    "something_unheard_of": "other",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_kernel_names_read_as_their_class_of_layer(name):
    assert kernel_class(name) == NAMES[name]


CANDIDATE = [
    {"name": "_conv_gemm_kernel", "time_us": 600.0},
    {"name": "_conv_pack_kernel", "time_us": 200.0},
    {"name": "triton_poi_fused_relu_1", "time_us": 100.0},
    {"name": "triton_red_fused__native_batch_norm_legit_0", "time_us": 100.0},
]
EAGER = [
    {"name": "void cudnn::detail::implicit_convolve_sgemm<float>()", "time_us": 400.0},
    {"name": "void at::native::vectorized_elementwise_kernel<4, relu>", "time_us": 150.0},
    {"name": "void at::native::batch_norm_collect_statistics_kernel<float>", "time_us": 250.0},
    {"name": "void at::native::(anonymous namespace)::CatArrayBatchedCopy<>", "time_us": 50.0},
]
COMPILED = [
    {"name": "sm90_xmma_fprop_implicit_gemm_tf32_cudnn", "time_us": 380.0},
    {"name": "triton_poi_fused_relu_batch_norm_0", "time_us": 120.0},
]


def test_time_is_summed_per_class_beside_both_baselines():
    rows = time_by_class(CANDIDATE, EAGER, COMPILED)
    by = {t.layer: t for t in rows}
    assert [t.layer for t in rows][:1] == ["convolution"]  # the candidate's largest first
    conv = by["convolution"]
    assert (conv.candidate_us, conv.eager_us, conv.compile_us) == (800.0, 400.0, 380.0)
    assert conv.kernels == 2 and conv.share == pytest.approx(0.8)
    assert by["normalization"].compile_us == 0.0  # torch.compile fused it into a pointwise one
    assert by["copy/layout"].candidate_us == 0.0 and by["copy/layout"].eager_us == 50.0
    assert sum(t.share for t in rows) == pytest.approx(1.0)
    lines = class_lines(rows)
    assert lines[0] == (
        "convolution: 80% here, 800.0 us; eager 400.0 us, torch.compile 380.0 us (2.11x the better)"
    )
    assert any(
        line.startswith("copy/layout: 0% here") and "(no kernel of this class here)" in line
        for line in lines
    )
    why = slowest_class(rows)
    assert why is not None and why.startswith("convolution/GEMM layers lose most: 800.0 us here")
    # no baseline profiled: the candidate's classes alone, no reason claimed
    alone = time_by_class(CANDIDATE)
    assert all(t.eager_us is None and t.compile_us is None for t in alone)
    assert slowest_class(alone) is None


def test_the_profile_says_where_a_slower_networks_time_goes():
    data = _job_data([0.030, 0.030], eager=0.020, compiled=0.015)
    data["kernels"] = [
        {**k, "calls": 1.0, "share": 0.25, "bytes": None, "triton": True} for k in CANDIDATE
    ]
    data["baselines"]["eager_kernels"] = EAGER
    data["baselines"]["compile_kernels"] = COMPILED
    r = _assemble(data, baseline="best")
    assert r.status == "slower"
    text = r.feedback()
    assert "Where the time goes (kernel time per forward, per class of layer):" in text
    assert "  convolution: 80% here, 800.0 us; eager 400.0 us" in text
    assert "Slower than the better baseline: convolution/GEMM layers lose most" in text
    d = json.loads(r.to_json())
    assert d["time_by_class"][0]["layer"] == "convolution"
    # a profile made before the baselines' breakdowns existed: the candidate's classes only
    del data["baselines"]["eager_kernels"], data["baselines"]["compile_kernels"]
    r = _assemble(data, baseline="best")
    assert r.time_by_class[0].eager_us is None
    assert "Slower than the better baseline" not in r.feedback()


def test_the_bench_reports_limit_names_the_losing_layers():
    """`tools.checks.roofline.slowdown_reason` is what the bench's report gives per problem below
    0.97x of the better baseline ("what limits it")."""
    from tools.checks.roofline import slowdown_reason

    data = _job_data([0.030, 0.030], eager=0.020, compiled=0.015)
    data["kernels"] = [
        {**k, "calls": 1.0, "share": 0.25, "bytes": None, "triton": True} for k in CANDIDATE
    ]
    data["baselines"].update(eager_kernels=EAGER, compile_kernels=COMPILED)
    slow = _assemble(data, baseline="best").to_dict()
    why = slowdown_reason(slow)
    assert why is not None and "; convolution/GEMM layers lose most: 800.0 us here" in why
    assert why.startswith("memory-bound: candidate 30.0 us")  # the roofline's part first
    slow["roofline"] = None  # no roofline: the layers alone
    assert slowdown_reason(slow).startswith("convolution/GEMM layers lose most")
    fast = _assemble({**data, "candidate_samples": [[0.010] * 50] * 2}, baseline="best")
    assert "lose most" not in (slowdown_reason(fast.to_dict()) or "")


def test_convolutions_and_gemms_are_compared_together():
    """torch.compile runs a 1x1 convolution as a GEMM (level3/13 on the H200): the candidate's
    convolutions are compared with the baseline's convolutions and GEMMs together."""
    rows = time_by_class(
        [{"name": "_conv_gemm_kernel", "time_us": 3341.0}, {"name": "triton_poi_fused_relu_0",
                                                            "time_us": 900.0}],
        [{"name": "void cudnn::detail::implicit_convolve_sgemm<float>()", "time_us": 3873.0},
         {"name": "ampere_sgemm_128x64_tn", "time_us": 802.0}],
        [{"name": "triton_tem_fused_mm_0", "time_us": 1909.0},
         {"name": "triton_poi_fused_relu_1", "time_us": 500.0}],
    )  # fmt: skip
    assert slowest_class(rows) == (
        "convolution/GEMM layers lose most: 3.34 ms here against 1.91 ms in the better baseline "
        "(34% of this forward's kernel time)"
    )
