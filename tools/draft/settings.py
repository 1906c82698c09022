"""Inductor's config for a draft: the fixed options (caches off, a plain Python wrapper...) and
the alternative settings (`SETTINGS`) a draft can be made with."""

from __future__ import annotations

from typing import Any

from tools.core.errors import ProblemError


def existing_options(config_module: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Keep only the config keys this torch has (names move between versions)."""
    kept = {}
    for key, value in options.items():
        owner = config_module
        *parents, leaf = key.split(".")
        try:
            for p in parents:
                owner = getattr(owner, p)
        except AttributeError:
            continue
        if hasattr(owner, leaf):
            kept[key] = value
    return kept


SETTINGS: dict[str, tuple[dict[str, Any], bool, bool, str]] = {
    "default": ({}, False, False, "Inductor's defaults"),
    "static_sizes": (
        {},
        False,
        True,
        "sizes fixed at the problem's: constant index math, persistent reductions where the "
        "row fits (a dynamic draft's symbolic row length rules them out)",
    ),
    "no_split_reductions": (
        {"split_reductions": False},
        False,
        True,
        "one kernel per reduction, no two-pass split of long reductions (sizes fixed)",
    ),
    "no_persistent_reductions": (
        {"triton.persistent_reductions": False},
        False,
        True,
        "looped reductions (R0_BLOCK tiles) instead of one block holding the row (sizes fixed)",
    ),
    "coordinate_descent": (
        {"coordinate_descent_tuning": True},
        True,
        False,
        "launch configs refined by coordinate descent (benchmarks: GPU only)",
    ),
    "inductor_conv": (
        {},
        True,
        False,
        "convolutions as Inductor's own Triton templates, the pointwise epilogue fused into the "
        "conv (fp32 FMA: the draft is generated with TF32 off), instead of this project's tf32x3 "
        "kernel followed by a separate epilogue kernel (GPU only: Inductor benchmarks them)",
    ),
    "max_autotune": (
        {"max_autotune": True, "max_autotune_pointwise": True, "coordinate_descent_tuning": True},
        True,
        False,
        "pointwise and reduction configs autotuned over the full config space (GPU only)",
    ),
}
"""Alternative Inductor settings a draft can be made with: name -> (config, benchmarks (so only
worth drafting on a GPU: on the CPU path nothing is benchmarked and the draft would be the
default one), static sizes (the choice only exists when sizes are known: Inductor neither splits
nor keeps persistent a reduction whose length is symbolic), what it changes). Where eager beats
torch.compile (reductions, pooling, norms), another lowering is worth timing;
`alternative_settings(device)` lists those worth a draft. A static-size draft is correct at the
problem's sizes only (its notes say so; `--generalize` rejects it)."""


def alternative_settings(device: str) -> list[str]:
    """The non-default settings worth drafting on this device (CPU: those that change codegen
    without benchmarking; CUDA: all)."""
    return [
        name
        for name, (_, benchmarks, _, _) in SETTINGS.items()
        if name != "default" and (device == "cuda" or not benchmarks)
    ]


def inductor_options(device: str, settings: str = "default") -> dict[str, Any]:
    import torch._inductor.config as inductor_config

    if settings not in SETTINGS:
        raise ProblemError(
            f"unknown Inductor settings {settings!r}; choose one of {', '.join(SETTINGS)}"
        )

    options = {
        # Always generate code: a cache hit skips codegen and so the capture.
        "force_disable_caches": True,
        "fx_graph_cache": False,
        "autotune_local_cache": False,
        "autotune_remote_cache": False,
        # GEMMs as the library choice, which the rewriter replaces with this project's template
        # (`inductor_patches.choices_kept` keeps only that choice). The ATEN backend alone:
        # Inductor's Triton GEMM templates were generated for every GEMM and then dropped, 17
        # choices an addmm on the CPU path (a 16-Linear MLP's draft: 3.8 of its 7.7 CPU s, 4.2 s
        # without them, the same draft byte for byte; `tests/test_draft_gemm_choices.py`).
        "max_autotune_gemm": True,
        "max_autotune_gemm_backends": "ATEN",
        "max_autotune_pointwise": False,
        # A plain Python wrapper: no C++ wrapper, no CUDA graphs, no graph partitions.
        "cpp_wrapper": False,
        "triton.cudagraphs": False,
        "graph_partition": False,
        "triton.autotune_at_compile_time": False,
        "size_asserts": False,
        "nan_asserts": False,
        "alignment_asserts": False,
        "freezing": False,
        "compile_threads": 1,
        # A kernel per fused group, not one combo kernel for unrelated work.
        "combo_kernels": False,
        "benchmark_kernel": False,
    }
    if device == "cpu":
        options["cpu_backend"] = "triton"
        options["autotune_in_subproc"] = False
    if settings != "inductor_conv":
        # Convolutions keep the library choice (`inductor_patches.choices_kept`), which the
        # rewriter replaces with tools.kernels.triton_conv: Inductor's Triton conv templates were
        # generated for every convolution and then dropped. Their codegen grew faster than the
        # layers (CPU probe, issue 33: `select_algorithm.generate` 1.6 CPU s at N=32 conv-bn
        # blocks, 5.5 s at N=64, benchmarks/results/cpu/depth_scaling).
        options["max_autotune_conv_backends"] = "ATEN"
    else:
        # Inductor's conv templates need its TRITON backend (torch's `use_triton_template` reads
        # the GEMM backends for every template); GEMMs still keep the library choice only.
        options["max_autotune_gemm_backends"] = "ATEN,TRITON"
    options.update(SETTINGS[settings][0])
    return existing_options(inductor_config, options)
