"""Graph nodes: each is `(state, runtime) -> partial state update`, small enough to read at once.

Live objects (LLM backend, verifier, run directory) come from the runtime context
(`agent.context.RunContext`); everything in the state is plain data, checkpointed after each node.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from typing import Any, Literal

from langgraph.runtime import Runtime

from agent.context import RunContext
from agent.drafters import draft_llm, first_prompt, refinement_prompt
from agent.evaluation import evaluate_candidate, improves, kill_jobs
from agent.interrupt import STOPPING, interruptible, sigint_held, sigint_pending
from agent.report import write_best_kernel, write_final_files
from agent.state import AgentState, Attempt, Candidate
from agent.tuning import FULL_PRECISION, precision_fallback
from tools.core.errors import BackendError
from tools.core.problem import problem_from_source

Decision = Literal["feedback", "tune", "finish"]

HEARTBEAT_S = 30.0
"""While candidates are evaluated, an `evaluating` event this often (what runs, for how long)."""

POLL_S = 0.1
"""How often the evaluation, waiting for its candidates, looks for a held Ctrl-C."""

STOP_WAIT_S = 2.0
"""On Ctrl-C, how long the evaluation waits for candidates that had their verdict to record it
(those whose jobs were killed return at once)."""


@interruptible
def baseline(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Load the problem, compute (and cache) reference outputs, time the baselines on a GPU."""
    ctx = runtime.context
    problem = problem_from_source(state["problem_source"], state["problem_path"])
    ctx.verifier.reference(problem)  # raises ProblemError for a broken problem
    update: dict[str, Any] = {}
    if ctx.device == "cuda":
        # timed in each candidate's timing job, in the same process (filled in by `evaluate`)
        update["baselines"] = {"available": False, "reason": "no candidate timed yet"}
    else:
        update["baselines"] = {
            "available": False,
            "reason": "no GPU: the Triton interpreter is not timed",
        }
        update["notes"] = [
            "CPU only: kernels run under the Triton interpreter and are not timed, "
            "so the first correct kernel ends the run."
        ]
    ctx.emit("baseline", baselines=update["baselines"])
    return update


@interruptible
def draft(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Draft this round's candidates: the compiler seed and/or LLM samples."""
    ctx, cfg = runtime.context, runtime.context.config
    round_ = state.get("round", 0) + 1
    pending: list[Candidate] = []
    update: dict[str, Any] = {"round": round_}
    if round_ == 1 and state.get("start_code"):
        pending.append(
            Candidate(source="given", prompt=None, response="", code=state["start_code"])
        )
    elif round_ == 1 and ctx.drafter is not None:
        ctx.emit("drafting", round=round_, source="compiler")
        pending.append(ctx.drafter.draft(state["problem_source"], state["problem_path"]))
    elif (retry := precision_fallback(state)) is not None:
        # The compiler draft's tf32x3/bf16x3 was a mismatch: the same draft at full precision.
        ctx.emit("drafting", round=round_, source=FULL_PRECISION)
        pending.append(retry)
    if ctx.backend is not None and not pending:
        k = min(cfg.samples_per_round, state["budget_left"])
        prompt = state.get("next_prompt") or first_prompt(state["problem_source"], cfg, ctx.backend)
        ctx.emit("drafting", round=round_, source="llm", samples=k)
        try:
            pending.extend(draft_llm(ctx.backend, prompt, k, cfg))
        except BackendError as exc:
            if not state.get("attempts") and not pending:
                raise  # nothing evaluated yet: the run fails now and leaves no directory
            update["stop_reason"] = f"LLM backend failed: {exc}"
            ctx.emit("error", message=str(exc))
        update["llm_samples_used"] = state.get("llm_samples_used", 0) + len(pending)
    update["pending"] = pending
    return update


@interruptible
def evaluate(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Verify (and on a GPU, profile) the pending candidates in parallel; keep the best."""
    ctx = runtime.context
    pending = state.get("pending") or []
    if not pending:
        return {}
    problem = problem_from_source(state["problem_source"], state["problem_path"])
    start = len(state.get("attempts") or [])
    round_ = state.get("round", 1)

    stopping = threading.Event()

    def run(i_cand: tuple[int, Candidate]) -> Attempt | None:
        i, cand = i_cand
        index = cand.get("index", start + i)
        attempt = evaluate_candidate(ctx, problem, cand, index=index, round_=round_)
        if stopping.is_set() or STOPPING.is_set():  # its jobs were killed by Ctrl-C: no verdict
            return None
        ctx.rundir.write_attempt(attempt, cand["prompt"], cand["response"])
        ctx.emit("attempt", attempt=attempt)
        return attempt

    workers = max(1, min(len(pending), ctx.verifier.sandbox.slots))
    pool = cf.ThreadPoolExecutor(max_workers=workers)
    futures: list[cf.Future[Attempt | None]] = []
    try:
        # Held, a Ctrl-C is raised by `_wait_for` or as the block ends: a KeyboardInterrupt
        # inside the futures' locks could leave one taken, and the wait below hang for good.
        with sigint_held():
            futures = [pool.submit(run, item) for item in enumerate(pending)]
            _wait_for(ctx, futures, [c.get("index", start + i) for i, c in enumerate(pending)])
            attempts = [f.result() for f in futures]
            pool.shutdown()
            update = _evaluated(ctx, state, list(zip(pending, attempts, strict=True)))
            if not (state.get("baselines") or {}).get("available"):
                timed = baselines_from([a for a in attempts if a])
                if timed:
                    update["baselines"] = timed
        return update
    except KeyboardInterrupt:
        # Stop now (not after every running job): kill the jobs, keep what finished.
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        kill_jobs()
        # A candidate whose jobs were just killed returns None at once; one that had its
        # verdict is being written and printed: wait for it, so what was printed is kept.
        cf.wait(futures, timeout=STOP_WAIT_S)
        results = [
            f.result() if f.done() and not f.cancelled() and f.exception() is None else None
            for f in futures
        ] + [None] * (len(pending) - len(futures))
        ctx.interrupted = _evaluated(ctx, state, list(zip(pending, results, strict=True)))
        # the rest (killed, or never started) is evaluated by `--resume`, under its number
        ctx.interrupted["pending"] = [
            {**c, "index": c.get("index", start + i)}
            for i, (c, a) in enumerate(zip(pending, results, strict=True))
            if a is None
        ]
        raise


def _wait_for(ctx: RunContext, futures: list[cf.Future[Any]], indices: list[int]) -> None:
    """Wait for every candidate, with an `evaluating` event every HEARTBEAT_S (an interpreted
    candidate can take minutes); raise KeyboardInterrupt within POLL_S of a held Ctrl-C."""
    t0 = time.monotonic()
    beat = t0 + HEARTBEAT_S
    while True:
        _, running = cf.wait(futures, timeout=min(POLL_S, max(0.0, beat - time.monotonic())))
        if sigint_pending():
            raise KeyboardInterrupt
        if not running:
            return
        if time.monotonic() < beat:
            continue
        beat += HEARTBEAT_S
        left = [i for i, f in zip(indices, futures, strict=True) if f in running]
        took = time.monotonic() - t0
        ctx.emit(
            "evaluating",
            attempts=left,
            elapsed_s=round(took),
            message=f"still evaluating attempt {', '.join(map(str, left))} ({took:.0f} s)",
        )


def _evaluated(
    ctx: RunContext, state: AgentState, evaluated: list[tuple[Candidate, Attempt | None]]
) -> dict[str, Any]:
    """The state update for the candidates evaluated (a candidate without an attempt was
    stopped by Ctrl-C: it spends no budget and stays pending): the new best, the budget."""
    attempts = [a for _, a in evaluated if a is not None]
    # The compiler seed and a repair's starting kernel are free; the budget counts new drafts.
    spent = sum(
        1 for c, a in evaluated if a is not None and c["source"] not in ("compiler", "given")
    )
    best = state.get("best")
    for a in attempts:
        if a["correct"] and improves(a, best):
            best = a
    if best is not state.get("best"):
        write_best_kernel(ctx, best)
    return {
        "attempts": attempts,
        "pending": [],
        "best": best,
        "budget_left": state["budget_left"] - spent,
    }


def baselines_from(attempts: list[Attempt]) -> dict[str, Any] | None:
    """The eager and torch.compile times measured in the first timed attempt's timing job."""
    for a in attempts:
        p = a.get("profile") or {}
        eager = p.get("eager") or {}
        if eager.get("median_ms"):
            return {
                "available": True,
                "device": p.get("device"),
                "eager_ms": eager["median_ms"],
                "compile_ms": (p.get("compiled") or {}).get("median_ms"),
                "cached": bool(p.get("baselines_cached")),
                "timed_in": f"attempt {a['index']}'s timing job",
            }
    return None


@interruptible
def decide(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Stop, tune or go on: the one place the stopping rules live."""
    ctx, cfg = runtime.context, runtime.context.config
    if state.get("stop_reason"):
        return {"decision": "finish"}
    best = state.get("best")
    if best is not None:
        if ctx.device != "cuda":
            return {
                "decision": "finish",
                "stop_reason": "found a correct kernel (CPU: no timing, so correct ends the run)",
            }
        if best["speedup"] is not None and best["speedup"] >= cfg.target_speedup:
            return {
                "decision": "finish",
                "stop_reason": f"found a correct kernel {best['speedup']:.2f}x faster than {cfg.baseline}",
            }
        if cfg.tune and not state.get("tuned"):
            return {"decision": "tune"}
    if ctx.backend is None:
        if state["budget_left"] > 0 and precision_fallback(state) is not None:
            return {"decision": "feedback"}  # the draft again at full precision, next round
        return {"decision": "finish", "stop_reason": "no LLM backend to draft further candidates"}
    if state["budget_left"] <= 0:
        return {"decision": "finish", "stop_reason": "budget spent"}
    left = ctx.time_left()
    if left is not None and left <= 0:
        return {"decision": "finish", "stop_reason": "time limit reached"}
    return {"decision": "feedback"}


def route(state: AgentState) -> Decision:
    """Pure router after `decide`."""
    decision = state.get("decision")
    if decision in ("feedback", "tune", "finish"):
        return decision  # type: ignore[return-value]
    raise ValueError(f"decide left an unexpected decision: {decision!r}")


@interruptible
def feedback(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Render the refinement prompt from the evidence of the last round."""
    ctx = runtime.context
    if not any(a["code"] for a in state["attempts"]) and all(
        a["source"] == "compiler" for a in state["attempts"]
    ):
        return {"next_prompt": None}  # nothing to refine yet (the compiler seed failed)
    # A model's reply without code is evidence too: the refinement prompt says so ("the
    # previous reply contained no usable code" and why) instead of asking the first question
    # again (a real model that rambled got the same prompt twice).
    prompt = refinement_prompt(
        state["problem_source"],
        state["attempts"],
        state.get("best"),
        ctx.config,
        ctx.backend,
        state.get("round", 1),
    )
    return {"next_prompt": prompt}


@interruptible
def tune(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Launch-parameter search on the best correct kernel (GPU), without spending LLM budget."""
    ctx = runtime.context
    best = state.get("best")
    update: dict[str, Any] = {"tuned": True}
    if best is None or ctx.device != "cuda":
        return update
    from agent.tuning import tune_attempt

    result = tune_attempt(ctx, state, best)
    if result is not None:
        update.update(result)
    return update


@interruptible
def finish(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Write best_kernel.py and the reports."""
    ctx = runtime.context
    reason = state.get("stop_reason") or "done"
    write_final_files(ctx, {**state, "stop_reason": reason})
    ctx.emit("finish", stop_reason=reason, best=state.get("best"))
    return {"stop_reason": reason}
