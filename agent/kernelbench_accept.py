"""Would KernelBench's own judge accept a kernel we export? (issue 36)

KernelBench's judge (ScalingIntelligence/KernelBench: `kernelbench/eval.py`,
`kernelbench/kernel_static_checker.py`) accepts a Triton generation when

1. its **static checker** finds nothing strict (`validate_kernel_static(code, backend="triton",
   precision=...)`: no try/except, no `pass` statement anywhere (docstrings included), no
   patched timers, threads or tensor subclasses, an `@triton.jit` kernel with `tl.*` ops); and
2. its **correctness check** passes: 5 seeded trials, each `torch.allclose(reference, output,
   atol=t, rtol=t)` with t = 1e-4 for fp32 and 1e-2 for fp16/bf16 (`get_tolerance_for_precision`),
   the reference run as PyTorch runs it by default on a GPU (cuDNN convolutions in TF32).

`acceptance` answers from what this project already knows: the checker is run on the exported
source (KernelBench's own, loaded from a path: `load_static_checker`; never copied here), and the
correctness part compares KernelBench's tolerance with the error our verification measured
against the reference *as KernelBench runs it*: only a verdict made under
`--reference-numerics pytorch-default` on a GPU measured that (`evidence.reference_error`,
`tools.orchestrate.reference.allclose_ratio`); any other says "not measured". It is a prediction: KernelBench
draws other inputs from its own seeds, and `benchmarks/kb_judge_agreement.py` runs its judge to
check it.
"""

from __future__ import annotations

import importlib.util
import math
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tools.core.errors import BadInputError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL_DIR = ROOT.parent / "shared" / "kernelbench-eval"
"""Where this project's shared tree keeps KernelBench's evaluation code (MIT; not vendored)."""
CHECKER_FILE = Path("kernelbench") / "kernel_static_checker.py"

KB_TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
"""KernelBench's `get_tolerance_for_precision` (atol = rtol), by `--precision`."""

REFUSING_STATUSES = frozenset(
    {
        "syntax_error",
        "compile_error",
        "runtime_error",
        "crash",
        "timeout",
        "mismatch",
        "shape_mismatch",
    }
)
"""Our verdicts that KernelBench's judge would reach too: code that does not load or run, or
outputs that are wrong. The others (`cheat`, `policy`, `resource`, `bad_input`) are checks of
this project that KernelBench does not make: its answer there is not known from ours."""


def checker_path(path: str | Path | None = None) -> Path | None:
    """KernelBench's `kernel_static_checker.py`: `path` (the file, or a KernelBench checkout or
    evaluation folder holding `kernelbench/kernel_static_checker.py`), else the copy in
    `../shared/kernelbench-eval` where present; None where there is none. A `path` that holds
    no checker is bad input."""
    if path is None:
        found = DEFAULT_EVAL_DIR / CHECKER_FILE
        return found if found.is_file() else None
    p = Path(path)
    for cand in (p, p / CHECKER_FILE, p / "src" / CHECKER_FILE):
        if cand.is_file():
            return cand
    raise BadInputError(
        f"no KernelBench static checker at {path}: give kernel_static_checker.py, or a folder "
        f"holding {CHECKER_FILE}"
    )


@cache
def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernelbench_static_checker", path)
    if spec is None or spec.loader is None:
        raise BadInputError(f"cannot load KernelBench's static checker from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "validate_kernel_static", None)):
        raise BadInputError(f"{path} defines no validate_kernel_static")
    return module


def load_static_checker(path: str | Path | None = None) -> ModuleType | None:
    """KernelBench's static checker as a module (`checker_path`), None where it is not found."""
    found = checker_path(path)
    return _load(str(found.resolve())) if found is not None else None


def static_check(
    source: str, checker: ModuleType | None, precision: str = "fp32"
) -> dict[str, Any]:
    """KernelBench's static checker on `source` as its judge runs it for Triton:
    `{"checked", "valid", "errors", "warnings"}` (`checked` False where no checker was found)."""
    if checker is None:
        return {"checked": False, "valid": None, "errors": [], "warnings": []}
    valid, errors, warnings = checker.validate_kernel_static(
        source, backend="triton", precision=precision
    )
    return {
        "checked": True,
        "valid": bool(valid),
        "errors": [str(e) for e in errors],
        "warnings": [str(w) for w in warnings],
    }


def correctness(verdict: dict[str, Any], precision: str = "fp32") -> dict[str, Any]:
    """KernelBench's correctness check predicted from our verdict: `{"accept": True | False |
    None, "tolerance", "measured" (the ratio against KernelBench's reference, or None), "why"}`."""
    tolerance = KB_TOLERANCE.get(precision, KB_TOLERANCE["fp32"])
    out: dict[str, Any] = {"accept": None, "tolerance": tolerance, "measured": None}
    status = str(verdict.get("status") or "")
    if not verdict.get("correct"):
        if status in REFUSING_STATUSES:
            out.update(accept=False, why=f"this project's verdict is {status}")
        else:
            out["why"] = (
                f"this project's verdict is {status or 'missing'}, a check KernelBench does not make"
            )
        return out
    numerics = verdict.get("reference_numerics") or "exact"
    error = (verdict.get("evidence") or {}).get("reference_error") or {}
    ratio = error.get("ratio")
    if ratio in ("inf", "nan"):  # strict JSON's spelling of a non-finite error (a NaN output)
        ratio = math.inf
    if not str(verdict.get("device") or "").startswith("cuda"):
        out["why"] = "not measured: verified on the CPU (KernelBench's reference runs on a GPU)"
    elif numerics != "pytorch-default":
        out["why"] = (
            f"not measured: verified against the {numerics} reference (KernelBench's uses "
            "TF32 convolutions: verify with --reference-numerics pytorch-default)"
        )
    elif not isinstance(ratio, (int, float)):
        out["why"] = "not measured: the verdict carries no error against the reference"
    else:
        ratio = float(ratio)
        out["measured"] = ratio
        if math.isfinite(ratio) and ratio <= tolerance:
            out.update(accept=True, why=f"error {ratio:.3g} within its tolerance {tolerance:g}")
        else:
            out.update(
                accept=False,
                why=f"error {ratio:.3g} against the reference as KernelBench runs it exceeds its "
                f"tolerance {tolerance:g} (|ref - out| / (1 + |out|), the largest over "
                f"{error.get('runs', '?')} runs)",
            )
    return out


def acceptance(
    source: str | None,
    verdict: dict[str, Any],
    checker: ModuleType | None,
    precision: str = "fp32",
) -> dict[str, Any]:
    """Whether KernelBench's judge would accept this generation: `would_accept` "yes", "no" or
    "unknown", `why_not` (reasons, empty for yes), and the two parts (`static`, `correctness`)."""
    if source is None:
        return {
            "would_accept": "no",
            "why_not": ["no code in the generation"],
            "static": static_check("", None),
            "correctness": {"accept": False, "why": "no code"},
        }
    static = static_check(source, checker, precision)
    correct = correctness(verdict, precision)
    why: list[str] = []
    if static["checked"] and not static["valid"]:
        why += [f"static checker: {e}" for e in static["errors"]]
    elif not static["checked"]:
        why.append("static checker not run (KernelBench's checker not found)")
    if correct["accept"] is not True:
        why.append(f"correctness: {correct['why']}")
    refused = (static["checked"] and not static["valid"]) or correct["accept"] is False
    if refused:
        answer = "no"
    elif static["valid"] and correct["accept"] is True:
        answer = "yes"
    else:
        answer = "unknown"
    return {"would_accept": answer, "why_not": why, "static": static, "correctness": correct}
