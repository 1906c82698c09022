"""The tuner node's work: try launch-parameter variants of the best correct kernel (GPU only),
re-verify and time each, keep the fastest correct one. Spends no LLM budget.

Search: one knob at a time (tools.tune.one_at_a_time), then the best value of each knob combined
and re-verified. Every variant goes through the full verification before it is timed.
"""

from __future__ import annotations

from typing import Any

from agent.context import RunContext
from agent.evaluation import evaluate_candidate, improves
from agent.report import write_best_kernel
from agent.state import Attempt, Candidate
from tools import tune as knobs
from tools.problem import problem_from_source

MAX_TRIALS = 16


def tune_attempt(ctx: RunContext, state: dict[str, Any], best: Attempt) -> dict[str, Any] | None:
    code = best.get("code")
    if not code or best.get("speedup") is None:
        return None
    problem = problem_from_source(state["problem_source"], state["problem_path"])
    variants = knobs.one_at_a_time(code, limit=min(MAX_TRIALS, ctx.config.tune_trials))
    if not variants:
        ctx.emit(
            "tune", message="no launch parameters to tune (no literal BLOCK/num_warps/num_stages)"
        )
        return {"notes": ["tuner: no literal launch parameters to vary"]}
    ctx.emit(
        "tune",
        message=f"tuning {len(variants)} launch-parameter variants of attempt {best['index']}",
    )
    start = len(state.get("attempts") or [])
    tried: list[Attempt] = []
    top = best
    for i, (desc, variant) in enumerate(variants):
        cand = Candidate(source=f"tuner:{desc}", prompt=None, response=desc, code=variant)
        a = evaluate_candidate(ctx, problem, cand, index=start + i, round_=state.get("round", 0))
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
    if top is not best:
        write_best_kernel(ctx, top)
    return {"attempts": tried, "best": top, "notes": [note]}
