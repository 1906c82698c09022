"""fp32 GEMM problems through the compiler drafter and the tuner's GEMM search, against eager
(cuBLAS, TF32 off) and torch.compile, on one GPU. Run by benchmarks/gpu_gemm.sh.

Per problem: draft with `tools.draft.draft_candidate` (CPU codegen, which needs no
torch.compile on the GPU; the GEMM is this project's template either way), then time the draft
and the tuner's variants (`tools.compile.tune.gemm_variants`: tile configs, then split-K and input
precision of the best) with `triton.testing.do_bench` (median, L2 flushed by do_bench), eager and
torch.compile the same way. A variant counts only if its output matches eager's at the
verifier's fp32 tolerance (atol = rtol = 1e-4, `torch.allclose`), so plain TF32 is timed but not
kept where it fails; max abs error against a float64 reference is reported for the draft's
best and for eager. This is a quick in-process check of our own drafts, not the product's
sandboxed verification. A per-problem time budget stops the search (what was tried is listed).

    python benchmarks/gemm_bench.py --out DIR PROBLEM.py...

Without a GPU it is a dry run (TRITON_INTERPRET=1, small problems): each "time" is one call.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _module(name: str, source: str, directory: Path) -> types.ModuleType:
    path = directory / f"{name}.py"  # a real file: @triton.jit reads its source back
    path.write_text(source)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def _bench(fn) -> float:
    import torch
    import triton.testing

    if not torch.cuda.is_available():  # a dry run under the interpreter: one call, not a timing
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return float(triton.testing.do_bench(fn, warmup=10, rep=40))


_DRAFT_ALL = r"""
import json, sys, time
from tools.draft import draft_candidate
out = {}
for path in sys.argv[2:]:
    t0 = time.monotonic()
    try:
        r = draft_candidate(open(path).read(), device="cpu")
        out[path] = {"source": r.source, "dynamic": r.dynamic, "notes": r.notes}
    except Exception as exc:
        out[path] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    out[path]["seconds"] = round(time.monotonic() - t0, 1)
json.dump(out, open(sys.argv[1], "w"))
"""


def draft_all(paths: list[str], work: Path) -> dict:
    """Every problem drafted in one subprocess (CPU codegen; Inductor needs real Triton objects,
    so no TRITON_INTERPRET there even in a dry run)."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    out = work / "drafts.json"
    out.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", _DRAFT_ALL, str(out), *paths],
        env=env,
        capture_output=True,
        text=True,
    )
    if not out.exists():
        error = f"drafting failed (exit {proc.returncode}): {proc.stderr[-300:]}"
        return {p: {"error": error, "seconds": 0} for p in paths}
    return json.loads(out.read_text())


def run_problem(path: Path, draft: dict, work: Path, budget_s: float) -> dict:
    import torch

    from tools.compile import tune

    start = time.monotonic()
    row: dict = {"problem": path.stem, "draft_s": draft["seconds"]}
    if "error" in draft:
        raise RuntimeError(f"draft failed: {draft['error']}")
    source = path.read_text()
    row["dynamic"] = draft["dynamic"]
    problem = _module(f"problem_{abs(hash(path.stem))}", source, work)
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = problem.Model(*problem.get_init_inputs()).to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    row["shapes"] = " ".join("x".join(map(str, x.shape)) for x in inputs if hasattr(x, "shape"))
    with torch.no_grad():
        expected = model(*inputs)
        reference = model.double()(*[x.double() for x in inputs]).float()
        model.float()
        row["eager_ms"] = _bench(lambda: model(*inputs))
        compiled = torch.compile(model)
        compiled(*inputs)
        row["compile_ms"] = _bench(lambda: compiled(*inputs))
    row["eager_err_fp64"] = float((expected - reference).abs().max())

    tried: list[dict] = []

    def measure(desc: str, code: str) -> dict | None:
        if time.monotonic() - start > budget_s:
            return None
        entry = {"variant": desc, "precisions": tune.precisions(code)}
        try:
            cand = _module(f"cand_{len(tried)}", code, work)
            torch.manual_seed(0)
            new = cand.ModelNew(*problem.get_init_inputs()).to(device)
            new.load_state_dict(model.state_dict(), strict=False)
            with torch.no_grad():
                out = new(*inputs)
                entry["ok"] = bool(torch.allclose(out, expected, atol=1e-4, rtol=1e-4))
                entry["err_fp64"] = float((out - reference).abs().max())
                entry["ms"] = _bench(lambda: new(*inputs))
        except Exception as exc:  # a variant that does not compile or run is reported
            entry["ok"] = False
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        tried.append(entry)
        return entry

    first = measure("draft (default config)", draft["source"])
    row["draft_ms"] = first.get("ms") if first else None
    best_code, best = draft["source"], first if first and first.get("ok") else None
    for stage in ("tiles", "split_precision"):
        for desc, code in tune.gemm_variants(best_code, stage, limit=16):
            entry = measure(desc, code)
            if entry is None:
                break
            if entry.get("ok") and (best is None or entry["ms"] < best["ms"]):
                best, best_code = entry, code
    row["tried"] = tried
    row["budget_hit"] = time.monotonic() - start > budget_s
    if best is not None:
        row["tuned_ms"] = best["ms"]
        row["best_variant"] = best["variant"]
        row["precision"] = ",".join(best["precisions"]) or "-"
        row["err_fp64"] = best["err_fp64"]
        base = min(row["eager_ms"], row["compile_ms"])
        row["vs_eager"] = row["eager_ms"] / best["ms"]
        row["vs_compile"] = row["compile_ms"] / best["ms"]
        row["vs_best"] = base / best["ms"]
    row["seconds"] = round(time.monotonic() - start, 1)
    return row


def table(rows: list[dict]) -> str:
    head = (
        "| problem | inputs | eager ms | compile ms | draft ms | tuned ms | vs eager | vs compile "
        "| vs better | precision | best variant | max err vs fp64 (tuned / eager) | tried | s |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )

    def f(v, spec=".3f"):
        return format(v, spec) if isinstance(v, (int, float)) else "-"

    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['problem']} | error: {r['error']} |" + " |" * 12)
            continue
        lines.append(
            f"| {r['problem']} | {r['shapes']} | {f(r['eager_ms'])} | {f(r['compile_ms'])} "
            f"| {f(r.get('draft_ms'))} | {f(r.get('tuned_ms'))} | {f(r.get('vs_eager'), '.2f')}x "
            f"| {f(r.get('vs_compile'), '.2f')}x | {f(r.get('vs_best'), '.2f')}x "
            f"| {r.get('precision', '-')} | {r.get('best_variant', '-')} "
            f"| {f(r.get('err_fp64'), '.1e')} / {f(r['eager_err_fp64'], '.1e')} "
            f"| {len(r['tried'])}{' (budget hit)' if r['budget_hit'] else ''} | {r['seconds']} |"
        )
    return head + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--deadline-s", type=float, default=130.0, help="all problems done by then (seconds)"
    )
    args = parser.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # eager fp32 is cuBLAS SGEMM, the bar
    torch.backends.cudnn.allow_tf32 = False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "gemm_bench"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    start = time.monotonic()
    drafts = draft_all(args.problems, work)
    for i, p in enumerate(args.problems):
        # An equal share of the time left, less ~10 s for drafting and the two baselines.
        left = args.deadline_s - (time.monotonic() - start)
        budget = left / (len(args.problems) - i) - 10.0
        if budget < 3.0:
            rows.append({"problem": Path(p).stem, "error": f"no time left ({left:.0f} s)"})
            continue
        try:
            rows.append(run_problem(Path(p), drafts[p], work, budget))
        except Exception as exc:
            rows.append({"problem": Path(p).stem, "error": f"{type(exc).__name__}: {exc}"[:300]})
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        (out / "gemm.json").write_text(json.dumps(rows, indent=1, default=str))
        (out / "gemm.md").write_text(table(rows))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
