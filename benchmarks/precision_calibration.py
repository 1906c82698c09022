"""Calibration of the judge's per-element precision check (`tools.checks.precision`): the largest
ratio of a candidate's error against an fp64 reference to the element's scale of fp32 error
(`PrecisionSample.scale`), over every element, for honest kernels (must stay under
`PRECISION_FACTOR`) and lower-precision ones (must exceed it). CPU, the Triton interpreter with
the candidate job's interpreter checks (TF32 dots, libdevice as tl), in this process.

    python benchmarks/precision_calibration.py [--seeds 3] [--out FILE]

Honest: examples/kernels/* on their problems, the honest adversarial kinds, the fp64 rule's
honest kernels (tests/test_fp64_accepted.py: fp64 and another fp32 order on sums that cancel)
and the mixed-scale one, and tests/test_every_run.py's honest kernels. Lower precision: the
adversarial corpus's fp16/TF32 kinds and tests/test_every_run.py's fp16 kinds (their fp16 made
unconditional, as on a repeated or later call).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tools.checks.freshness import fp64_outputs  # noqa: E402
from tools.checks.precision import PRECISION_FACTOR, element_ratios, precision_sample  # noqa: E402
from tools.job.job_common import _copy_matching_weights, exec_module, make_inputs  # noqa: E402


def cases() -> list[tuple[str, str, str, str, bool]]:
    """(name, problem source, problem path, kernel source, honest)."""
    from tests import test_every_run as every
    from tests import test_fp64_accepted as fp64
    from tests import test_mixed_scale_outputs as mixed

    out = []
    problems = ROOT / "examples" / "problems"
    for k in sorted((ROOT / "examples" / "kernels").glob("*.py")):
        p = problems / f"{k.stem.split('_inductor')[0]}.py"
        out.append((f"examples/{k.stem}", p.read_text(), str(p), k.read_text(), True))
    for k in sorted((ROOT / "tests" / "adversarial").glob("*.py")):
        text = k.read_text()
        honest = "expected: ok" in text
        low = k.stem in (
            "softmax__fp16_precision",
            "softmax__fp16_hidden_in_tolerance",
            "softmax__fp16_after_first_trial",
            "matmul__tf32_default",
        )
        if not (honest or low) or "requires: cuda" in text or "_vendor" in text:
            continue
        if k.stem.startswith(("relu__thirdparty", "relu__side_stream")):
            continue  # a package of its own / CUDA streams: verified by tests/test_adversarial
        p = problems / f"{k.stem.split('__')[0]}.py"
        if not p.exists():
            p = ROOT / "tests" / "fixtures" / "adversarial_problems" / p.name
        text = text.replace("_CALLS[0] > 2", "True")  # its fp16 on every call
        out.append((f"adversarial/{k.stem}", p.read_text(), str(p), text, honest))
    out.append(("fp64/exact", fp64.PROBLEM, "cancel.py", fp64._kernel(fp64.EXACT), True))
    out.append(("fp64/fp32_other_order", fp64.PROBLEM, "cancel.py", fp64._kernel(fp64.FP32), True))
    out.append(
        ("fp64/tf32_on_cancelling", fp64.PROBLEM, "cancel.py", fp64._kernel(fp64.TF32), False)
    )
    honest_mixed = mixed.KERNEL.replace("HONEST", "True")
    out.append(("mixed_scale/honest", mixed.PROBLEM, "mixed.py", honest_mixed, True))
    for name, prob, kernel, honest in (
        ("every_run/honest_softmax", every.SOFTMAX, every.HONEST_SOFTMAX, True),
        ("every_run/split_reduction", every.MSE, every.SPLIT_REDUCTION_LAST_PROGRAM, True),
        ("every_run/libdevice_tanh", every.TANH, every.LIBDEVICE_TANH, True),
        (
            "every_run/fp16_on_repeats",
            every.SOFTMAX,
            every.FP16_ON_REPEATS.replace("if key in _SEEN else 0.0", ""),
            False,
        ),
        ("every_run/fp16_on_small_elements", every.SOFTMAX, every.FP16_ON_SMALL_ELEMENTS, False),
    ):
        out.append((name, prob, f"{name.split('/')[1]}.py", kernel, honest))
    return out


def worst_ratio(problem: str, path: str, kernel: str, seed: int) -> tuple[float, float]:
    """(largest ratio over every element and output, its 99.9th percentile) for one seed."""
    mod = exec_module(problem, path, f"problem_{abs(hash(path))}")
    cand = exec_module(kernel, "candidate.py", f"cand_{abs(hash(kernel))}")
    torch.manual_seed(seed)
    model = mod.Model(*mod.get_init_inputs())
    torch.manual_seed(seed)
    model_new = cand.ModelNew(*mod.get_init_inputs())
    _copy_matching_weights(model, model_new)
    inputs = make_inputs(mod, seed + 1000, "cpu")
    with torch.no_grad():
        expected = [model(*inputs)]
        got = [model_new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])]
    expected = [e for e in _flat(expected)]
    got = [g for g in _flat(got)]
    reference64 = fp64_outputs(model, inputs)
    samples = precision_sample(expected, reference64, torch.Generator(), sample=1 << 30)
    worst, q = 0.0, 0.0
    for g, s in zip(got, samples):
        if s is None or not isinstance(g, torch.Tensor) or g.dtype != torch.float32:
            continue
        _, ratio = element_ratios(g, s)
        worst = max(worst, float(ratio.max()))
        q = max(q, float(torch.quantile(ratio[:1_000_000].float(), 0.999)))
    return worst, q


def _flat(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/precision_per_element.md"))
    args = ap.parse_args()
    from tools.job import interp_checks

    interp_checks.install()  # TF32 dots and libdevice, as in the candidate's job
    rows = []
    t0 = time.time()
    for name, problem, path, kernel, honest in cases():
        try:
            runs = [worst_ratio(problem, path, kernel, s) for s in range(args.seeds)]
        except Exception as exc:  # noqa: BLE001 - a kernel this in-process harness cannot run
            print(f"{name}: skipped ({type(exc).__name__}: {str(exc)[:80]})", file=sys.stderr)
            continue
        worst = max(r[0] for r in runs)
        q = max(r[1] for r in runs)
        flagged = sum(r[0] > PRECISION_FACTOR for r in runs)
        rows.append((name, honest, worst, q, flagged, len(runs)))
        print(
            f"{name:45s} {'honest' if honest else 'LOW':6s} worst {worst:10.3g} "
            f"p99.9 {q:8.3g} flagged {flagged}/{len(runs)}",
            file=sys.stderr,
            flush=True,
        )
    lines = [
        "# Per-element precision check: calibration (CPU, Triton interpreter)",
        "",
        f"`python benchmarks/precision_calibration.py --seeds {args.seeds}` "
        f"({time.time() - t0:.0f} s). Ratio: an element's error against the fp64 reference "
        "over its scale of fp32 error (`tools.checks.precision.PrecisionSample.scale`), every element "
        f"of every output; flagged: runs whose worst ratio exceeds PRECISION_FACTOR = "
        f"{PRECISION_FACTOR:g}.",
        "",
        "| kernel | kind | worst ratio | 99.9th percentile | runs flagged |",
        "|---|---|---:|---:|---:|",
    ]
    for name, honest, worst, q, flagged, n in rows:
        kind = "honest" if honest else "lower precision"
        lines.append(f"| {name} | {kind} | {worst:.3g} | {q:.3g} | {flagged}/{n} |")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    wrong = [r for r in rows if (r[4] > 0) == r[1]]
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
