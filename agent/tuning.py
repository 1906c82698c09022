"""The tuner node's work: try launch-parameter variants of the best correct kernel (GPU only),
re-verify and time each, keep the fastest correct one. Spends no LLM budget.

Search: for this project's GEMM template calls (tools.kernels.gemm_template), whole tile configs first,
then split-K and the `tl.dot` input precision of the best (tools.compile.tune.gemm_variants); for other
launches one knob at a time (tools.compile.tune.one_at_a_time). Every variant goes through the full
verification before it is timed, so a less precise variant (plain TF32) survives only where the
problem's tolerance allows it; the notes name the precision the kept kernel uses.

Where eager beats the compiler's draft (on a GPU: reductions, pooling, norms), drafts made with
other Inductor settings (tools.draft.SETTINGS: no split reductions, looped instead of
persistent reductions, coordinate descent, max-autotune for pointwise and reductions) are
evaluated first, each a candidate like any other. On the CPU nothing is timed, so none are made.
"""

from __future__ import annotations

from typing import Any

from agent.context import RunContext
from agent.evaluation import evaluate_candidate, improves
from agent.report import write_best_kernel
from agent.state import Attempt, Candidate
from tools.compile import tune as knobs
from tools.core.problem import problem_from_source

MAX_TRIALS = 16


def _stages(code: str, trials: int) -> list[tuple[str, int]]:
    """(stage, variant budget): GEMM tiles, then GEMM split-K/precision, then other knobs."""
    if not knobs.gemm_sites(code):
        return [("knobs", trials)]
    tiles = max(1, (trials * 2) // 3)
    split = max(0, trials - tiles)
    return [("tiles", tiles), ("split_precision", split)]


def _variants(code: str, stage: str, limit: int) -> list[tuple[str, str]]:
    if limit <= 0:
        return []
    if stage == "knobs":
        return knobs.one_at_a_time(code, limit=limit)
    return knobs.gemm_variants(code, stage=stage, limit=limit)


FULL_PRECISION = "compiler:ieee"
"""The source of the compiler draft retried at full fp32 precision (`precision_fallback`)."""


def precision_fallback(state: dict[str, Any]) -> Candidate | None:
    """The compiler draft again with every GEMM and convolution at `input_precision="ieee"`,
    when that draft used a reduced precision (tf32x3, bf16x3, tf32) and was a mismatch, no
    correct kernel is known yet, and this has not been tried. None otherwise.

    tf32x3 passes fp32's tolerance on most problems, but not everywhere (KernelBench
    level2/14 on the H200: its error summed over 8192 GEMM outputs); without this, a run with
    no model had nothing left to try and stopped on the mismatch.
    """
    if state.get("best") is not None:
        return None
    attempts = state.get("attempts") or []
    if any(a["source"] == FULL_PRECISION for a in attempts):
        return None
    for a in attempts:
        if a["source"] == "compiler" and a["status"] == "mismatch" and a["code"]:
            code = knobs.full_precision_variant(a["code"])
            if code is not None:
                return Candidate(
                    source=FULL_PRECISION,
                    prompt=None,
                    response=(
                        f"attempt {a['index']} (the compiler draft) with every GEMM and "
                        "convolution at input_precision 'ieee': its reduced precision was a "
                        "mismatch"
                    ),
                    code=code,
                )
    return None


def _alternative_drafts(ctx: RunContext, state: dict[str, Any], best: Attempt, limit: int):
    """(settings, candidate) drafts with other Inductor settings, when the best is the default
    compiler draft and eager beats it (speedup over eager under 1.0, so GPU only)."""
    from tools.draft import alternative_settings
    from tools.draft.assemble import STATIC_SIZES_DOC

    eager = (best.get("speedups") or {}).get("eager")
    if best.get("source") != "compiler" or eager is None or eager >= 1.0:
        return []
    if getattr(ctx, "drafter", None) is None or getattr(ctx, "device", None) != "cuda":
        return []
    # Inductor's own conv templates only matter where the draft has this project's convolution,
    # and there they come first (the only alternative that changes the conv itself).
    code = best.get("code") or ""
    names = [n for n in alternative_settings(ctx.device) if n != "inductor_conv"]
    if STATIC_SIZES_DOC in code:
        # a static draft already (a network's, `tools.draft.job._auto_sizes`): "static_sizes"
        # would draft the same candidate again
        names = [n for n in names if n != "static_sizes"]
    if "triton_convolution(" in code:
        names.insert(0, "inductor_conv")
    out = []
    for name in names[:limit]:
        ctx.emit("tune", message=f"drafting with Inductor settings {name!r} (eager is faster)")
        cand = ctx.drafter.draft(state["problem_source"], state["problem_path"], settings=name)
        if cand["code"]:
            out.append((name, cand))
    return out


def tune_attempt(ctx: RunContext, state: dict[str, Any], best: Attempt) -> dict[str, Any] | None:
    code = best.get("code")
    if not code or best.get("speedup") is None:
        return None
    problem = problem_from_source(state["problem_source"], state["problem_path"])
    trials = min(MAX_TRIALS, ctx.config.tune_trials)
    stages = _stages(code, trials)
    if not _variants(code, stages[0][0], stages[0][1]):
        ctx.emit(
            "tune", message="no launch parameters to tune (no literal BLOCK/num_warps/num_stages)"
        )
        return {"notes": ["tuner: no literal launch parameters to vary"]}
    start = len(state.get("attempts") or [])
    tried: list[Attempt] = []
    top = best
    for name, cand in _alternative_drafts(ctx, state, best, limit=max(0, trials // 4)):
        a = evaluate_candidate(
            ctx, problem, cand, index=start + len(tried), round_=state.get("round", 0)
        )
        ctx.rundir.write_attempt(a, None, f"Inductor settings {name}")
        ctx.emit("attempt", attempt=a)
        tried.append(a)
        if a["correct"] and improves(a, top):
            top = a
    stages = _stages(top["code"], trials - len(tried))
    for stage, budget in stages:
        variants = _variants(top["code"], stage, budget)
        if not variants:
            continue
        ctx.emit(
            "tune",
            message=f"tuning {len(variants)} {stage} variants of attempt {top['index']}",
        )
        for desc, variant in variants:
            cand = Candidate(source=f"tuner:{desc}", prompt=None, response=desc, code=variant)
            a = evaluate_candidate(
                ctx, problem, cand, index=start + len(tried), round_=state.get("round", 0)
            )
            ctx.rundir.write_attempt(a, None, desc)
            ctx.emit("attempt", attempt=a)
            tried.append(a)
            if a["correct"] and improves(a, top):
                top = a
    note = f"tuner: {len(tried)} variants tried, {sum(a['correct'] for a in tried)} correct; " + (
        f"best {top['speedup']:.2f}x ({top['source']})"
        if top is not best
        else "none beat the original"
    )
    used = knobs.precisions(top["code"] or "")
    if used:
        note += f"; GEMM input precision: {', '.join(dict.fromkeys(used))}"
    if top is not best:
        write_best_kernel(ctx, top)
    return {"attempts": tried, "best": top, "notes": [note]}
