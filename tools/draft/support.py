"""Which torch versions the drafter works with: the Inductor internals it reaches into, probed
up front (`check_torch_support`)."""

from __future__ import annotations

import re

from tools.core.errors import ShimError

MIN_TORCH = (2, 11)
"""Oldest torch whose Inductor internals this shim was written against (the GPU machine's)."""
TESTED_TORCH = ("2.11", "2.13")
"""Minor versions the drafter has been run on (CPU path on 2.13; both paths on 2.11's GPU box)."""


def _torch_version() -> tuple[int, int]:
    import torch

    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    if not match:
        raise ShimError(f"cannot parse torch version {torch.__version__!r}")
    return int(match.group(1)), int(match.group(2))


def check_torch_support() -> list[str]:
    """Raise `ShimError` unless this torch's Inductor internals are the ones the drafter uses.

    Returns notes (e.g. "torch 2.14 is newer than any version tested").
    """
    import torch

    version = _torch_version()
    if version < MIN_TORCH:
        raise ShimError(
            f"the Inductor drafter needs torch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} "
            f"(tested on {', '.join(TESTED_TORCH)}); this is torch {torch.__version__}, whose "
            "Inductor internals (wrapper layout, launch heuristics, GridExpr) differ"
        )
    missing = []
    probes = {
        "torch._inductor.config": [
            "cpu_backend",
            "max_autotune_gemm",
            "max_autotune_gemm_backends",
        ],
        "torch._inductor.graph": ["GraphLowering"],
        "torch._inductor.compile_fx": ["compile_fx"],
        "torch._inductor.select_algorithm": [
            "AlgorithmSelectorCache",
            "TritonTemplateCaller",
            "ExternKernelCaller",
        ],
        "torch._inductor.runtime.triton_heuristics": ["CachingAutotuner", "GridExpr"],
        "torch._inductor.runtime.triton_helpers": ["maximum", "max2"],
    }
    import importlib

    for module_name, names in probes.items():
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # an ImportError or anything the import itself raises
            missing.append(f"{module_name} ({type(exc).__name__}: {exc})")
            continue
        missing += [f"{module_name}.{n}" for n in names if not hasattr(module, n)]
    from torch._inductor.graph import GraphLowering

    if not hasattr(GraphLowering, "save_output_code"):
        missing.append("GraphLowering.save_output_code")
    if missing:
        raise ShimError(
            f"torch {torch.__version__}: the Inductor internals the drafter uses are missing: "
            + ", ".join(missing)
        )
    notes = []
    tested = {tuple(int(p) for p in v.split(".")) for v in TESTED_TORCH}
    if version not in tested:
        notes.append(
            f"torch {torch.__version__} is not among the versions tested ({', '.join(TESTED_TORCH)})"
        )
    return notes
