"""Running a benchmark: the thread executor (one Verifier, a thread pool over its sandbox
slots), the Ray executor (one task per problem), and the clean stop on SIGINT; the loop mode
(the agent per problem) is `agent.bench.loop`."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from agent.bench.config import _RESUME_KEYS, RESUME_DEFAULTS, BenchConfig, Event
from agent.bench.loop import _run_loop_mode
from agent.bench.records import Draft, Evaluated, evaluate_sample
from agent.bench.report import rebuild_report
from agent.bench.shared import _evaluated, _make_backend, _ray_init, _ray_resources
from agent.bench.store import BenchDir, discover_problems
from agent.evaluation import kill_jobs, make_verifier
from agent.rundir import write_atomic
from tools.core.errors import BackendError, BadInputError, TritonAgentError
from tools.core.problem import Problem, read_problem
from tools.orchestrate.evaluate import DEFAULT_BASELINE
from tools.orchestrate.verify import VerifyOptions

log = logging.getLogger(__name__)


def run_bench(
    problems_path: str,
    cfg: BenchConfig,
    *,
    backend: Any = None,
    on_event: Event | None = None,
) -> dict[str, Any]:
    """Run (or resume) a benchmark into `cfg.out`; returns the report object."""
    emit = _safe(on_event)
    bdir = BenchDir(cfg.out)
    paths = discover_problems(problems_path, cfg.only)
    _check_resume(bdir, cfg)
    problems: dict[str, Problem] = {}
    errors: dict[str, str] = {}
    for p in paths:
        try:
            prob = read_problem(p)
        except BadInputError as exc:
            errors[Path(p).stem] = str(exc)
            continue
        problems[prob.name] = prob
    settings = {
        **cfg.settings(),
        "problems_path": os.path.abspath(problems_path),
        "problems": [Path(p).stem for p in paths],
    }
    prev = bdir.read_settings() or {}
    settings["started"] = prev.get("started") or time.strftime("%Y-%m-%dT%H:%M:%S")
    bdir.write_json("bench.json", settings)
    for name, prob in problems.items():
        bdir.write_json(
            Path(name) / "problem.json",
            {"name": name, "path": os.path.abspath(prob.path), "digest": prob.digest},
        )
    started = time.monotonic()
    interrupted = False
    try:
        if cfg.mode == "sample":
            errors.update(_run_sample_mode(problems, cfg, bdir, backend, emit))
        else:
            errors.update(_run_loop_mode(problems, cfg, bdir, backend, emit))
    except KeyboardInterrupt:
        # SIGINT (Ctrl-C, `timeout --signal=INT`): what is done is on disk; report it and stop
        # (sample mode: running candidates get cfg.stop_grace_s to finish, `_stop_running`).
        interrupted = True
        emit({"event": "interrupted"})
    elapsed = time.monotonic() - started
    if not interrupted:  # an interrupted run has not seen every problem: keep old errors
        for name, msg in errors.items():
            bdir.write_json(Path(name) / "error.json", {"error": msg})
        for name in problems:
            if name not in errors and (bdir.path / name / "error.json").exists():
                (bdir.path / name / "error.json").unlink()
    report = rebuild_report(bdir.path, elapsed_s=elapsed, interrupted=interrupted)
    emit({"event": "finish", "report": report})
    return report


def _check_resume(bdir: BenchDir, cfg: BenchConfig) -> None:
    prev = bdir.read_settings()
    if prev is None:
        return
    now = cfg.settings()
    prev = {**RESUME_DEFAULTS, **prev}  # a key a bench from before it was added never had
    diff = [k for k in _RESUME_KEYS if prev.get(k) != now.get(k)]
    if diff:
        raise BadInputError(
            f"{bdir.path} holds a benchmark with other settings ({', '.join(f'{k}: {prev.get(k)!r} -> {now.get(k)!r}' for k in diff)}); "
            "rerun with the same settings to resume, or choose another --out"
        )


def _run_sample_mode(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, backend: Any, emit: Event
) -> dict[str, str]:
    """Draw (in this thread, problem after problem: a replay script stays in order) and
    evaluate (in parallel) every candidate not yet done. Returns per-problem errors."""
    problems, todo = _sample_todo(problems, cfg, bdir, emit)
    if not any(todo.values()):
        return {}
    llm = None
    if not cfg.compiler_only:
        llm = backend if backend is not None else _make_backend(cfg)

    def drafts_for(name: str) -> list[Draft]:
        return _drafts(name, problems[name], todo[name], llm, cfg, bdir, emit)

    if cfg.executor == "ray":
        return _sample_mode_on_ray(problems, todo, drafts_for, cfg, bdir, emit)
    return _sample_mode_in_threads(problems, todo, drafts_for, cfg, bdir, emit)


def _sample_todo(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, emit: Event
) -> tuple[dict[str, Problem], dict[str, list[int]]]:
    """The problems in the order they are drawn for (with the compiler alone, one that could not
    run last time after the others) and, per problem, the samples not done yet."""
    if cfg.compiler_only:  # a problem that could not run last time waits behind the others
        order = sorted(problems, key=lambda name: (bdir.path / name / "error.json").exists())
        problems = {name: problems[name] for name in order}
    todo = {}
    for name in problems:
        done = bdir.done_samples(name)
        missing = [i for i in range(cfg.per_problem) if i not in done]
        todo[name] = missing
        emit({"event": "problem", "problem": name, "done": len(done), "todo": len(missing)})
    return problems, todo


def _drafts(
    name: str,
    prob: Problem,
    samples: list[int],
    llm: Any,
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
) -> list[Draft]:
    """A problem's candidates for `samples`: those drawn before an interruption, and the rest
    drawn now from the LLM in one call (or left for the compiler to draft when it evaluates
    them). Raises BackendError when the backend fails or returns too few."""
    drafts: list[Draft] = []
    need: list[int] = []
    for i in samples:
        d = bdir.read_draft(name, i)
        if d is not None:
            drafts.append(d)
        else:
            need.append(i)
    if not need:
        return drafts
    if llm is None:
        return drafts + [Draft(problem=name, sample=i, source="compiler:pending") for i in need]
    from agent.drafters import draft_llm, first_prompt

    prompt = first_prompt(prob.source, cfg.agent, llm)
    _write_prompt(bdir, name, prompt)
    emit({"event": "drafting", "problem": name, "samples": len(need)})
    drafted_at, t0 = round(time.time(), 3), time.monotonic()
    cands = draft_llm(llm, prompt, len(need), cfg.agent)  # raises BackendError
    share = round((time.monotonic() - t0) / max(len(cands), 1), 3)
    for i, cand in zip(need, cands, strict=False):
        d = Draft(
            problem=name,
            sample=i,
            source=cand["source"],
            response=cand["response"],
            code=cand["code"],
            drafted_at=drafted_at,
            draft_s=share,
        )
        bdir.write_draft(d)
        drafts.append(d)
    if len(cands) < len(need):
        raise BackendError(f"the backend returned {len(cands)} of {len(need)} samples")
    return drafts


def _sample_mode_on_ray(
    problems: dict[str, Problem],
    todo: dict[str, list[int]],
    drafts_for: Callable[[str], list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
) -> dict[str, str]:
    """Draw every problem's candidates here, then evaluate them on Ray, a task per problem."""
    errors: dict[str, str] = {}
    work: dict[str, list[Draft]] = {}
    for name in problems:
        if not todo[name]:
            continue
        try:
            work[name] = drafts_for(name)
        except TritonAgentError as exc:
            errors[name] = str(exc)
            emit({"event": "error", "problem": name, "message": str(exc)})
            if isinstance(exc, BackendError):
                break  # the backend is gone: the rest stays to do (rerun resumes)
    errors.update(_evaluate_with_ray(problems, work, cfg, bdir, emit))
    return errors


def _sample_mode_in_threads(
    problems: dict[str, Problem],
    todo: dict[str, list[int]],
    drafts_for: Callable[[str], list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
) -> dict[str, str]:
    """Evaluate the candidates on one Verifier, a thread per sandbox slot, while this thread
    draws the next problem's; on SIGINT stop them (`_stop_running`)."""
    errors: dict[str, str] = {}
    verifier = make_verifier(cfg.verify_options())
    slots = verifier.sandbox.slots
    emit({"event": "start", "device": verifier.device, "slots": slots})
    stopping = threading.Event()

    def task(d: Draft) -> Evaluated | None:
        ev = evaluate_sample(
            verifier, problems[d.problem], d, protocol=cfg.protocol, baseline=cfg.agent.baseline
        )
        if stopping.is_set():  # its jobs may have been killed by the stop: not a verdict
            return None
        bdir.write_evaluated(ev)
        return ev

    pool = cf.ThreadPoolExecutor(max_workers=slots, thread_name_prefix="bench")
    futures: dict[cf.Future, Draft] = {}
    try:
        _submit_drafts(pool, task, futures, todo, drafts_for, bdir, errors, emit)
        _collect(futures, errors, emit)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_running(futures, stopping, cfg.stop_grace_s, emit)
        raise
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return errors


def _submit_drafts(
    pool: cf.ThreadPoolExecutor,
    task: Callable[[Draft], Evaluated | None],
    futures: dict[cf.Future, Draft],
    todo: dict[str, list[int]],
    drafts_for: Callable[[str], list[Draft]],
    bdir: BenchDir,
    errors: dict[str, str],
    emit: Event,
) -> None:
    """Draw each problem's candidates and submit them to the pool (into `futures` as they go,
    so a stop sees every one submitted). When the backend fails, what was drawn is still
    evaluated and the rest stays to do (a rerun resumes)."""
    for name, samples in todo.items():
        if not samples:
            continue
        try:
            drafts = drafts_for(name)
        except TritonAgentError as exc:
            errors[name] = str(exc)
            emit({"event": "error", "problem": name, "message": str(exc)})
            if isinstance(exc, BackendError):
                # Evaluate what was drawn; the rest stays to do (a rerun resumes).
                drafts = [d for i in samples if (d := bdir.read_draft(name, i))]
                for d in drafts:
                    futures[pool.submit(task, d)] = d
                break
            continue
        for d in drafts:
            futures[pool.submit(task, d)] = d


def _collect(futures: dict[cf.Future, Draft], errors: dict[str, str], emit: Event) -> None:
    """Each evaluation as it completes: a sample event, or the problem's error (its reference
    cannot run)."""
    for fut in cf.as_completed(futures):
        d = futures[fut]
        try:
            ev = fut.result()
        except TritonAgentError as exc:  # the problem itself (reference) cannot run
            errors.setdefault(d.problem, str(exc))
            emit({"event": "error", "problem": d.problem, "message": str(exc)})
            continue
        if ev is not None:
            emit({"event": "sample", "record": ev.record.to_dict()})


def _stop_running(
    futures: Iterable[cf.Future], stopping: threading.Event, grace_s: float, emit: Event
) -> None:
    """After SIGINT: let the candidates being evaluated finish for up to `grace_s` seconds
    (a second SIGINT cuts that short), then discard what is still running and kill its job
    processes, so the process can exit now instead of when their timeouts expire."""
    running = [f for f in futures if not f.done()]
    emit({"event": "stopping", "running": len(running), "grace_s": grace_s})
    try:
        cf.wait(running, timeout=grace_s)
    except KeyboardInterrupt:
        pass
    stopping.set()
    # A task between two jobs may start another one: kill until every task has returned.
    deadline = time.monotonic() + 30.0
    while any(not f.done() for f in running) and time.monotonic() < deadline:
        kill_jobs()
        cf.wait(running, timeout=0.5)


def _write_prompt(bdir: BenchDir, name: str, prompt: Any) -> None:
    if isinstance(prompt, list):
        text = "\n\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in prompt)
    else:
        text = str(prompt)
    write_atomic(bdir.path / name / "prompt.txt", text)


# -- Ray ----------------------------------------------------------------------------------------


def evaluate_problem(
    problem_path: str,
    problem_source: str,
    drafts: list[dict[str, Any]],
    verify_options: VerifyOptions,
    protocol: str,
    baseline: str = DEFAULT_BASELINE,
) -> list[dict[str, Any]]:
    """One problem's candidates, evaluated on this machine (a Ray task's body): a Verifier on
    the GPUs this process may use (Ray sets CUDA_VISIBLE_DEVICES), candidates in parallel."""
    from tools.core.problem import problem_from_source

    # On CUDA: every GPU this process sees (ids or UUIDs in CUDA_VISIBLE_DEVICES alike)
    verifier = make_verifier(verify_options, one_job=True)
    problem = problem_from_source(problem_source, problem_path)
    ds = [Draft(**d) for d in drafts]
    with cf.ThreadPoolExecutor(max_workers=verifier.sandbox.slots) as pool:
        results = list(
            pool.map(
                lambda d: evaluate_sample(
                    verifier, problem, d, protocol=protocol, baseline=baseline
                ),
                ds,
            )
        )
    return [
        {
            "record": e.record.to_dict(),
            "verdict": e.verdict,
            "profile": e.profile,
            "draft": dataclasses.asdict(e.draft),
        }
        for e in results
    ]


def _evaluate_with_ray(
    problems: dict[str, Problem],
    work: dict[str, list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
) -> dict[str, str]:
    errors: dict[str, str] = {}
    if not work:
        return errors
    ray, started = _ray_init(cfg.ray_address)
    try:
        _ray_evaluate(ray, problems, work, cfg, bdir, emit, errors)
    finally:
        if started:
            ray.shutdown()
    return errors


def _ray_evaluate(
    ray: Any,
    problems: dict[str, Problem],
    work: dict[str, list[Draft]],
    cfg: BenchConfig,
    bdir: BenchDir,
    emit: Event,
    errors: dict[str, str],
) -> None:
    remote = ray.remote(evaluate_problem).options(**_ray_resources(cfg), max_retries=0)
    emit(
        {
            "event": "start",
            "device": "ray",
            "slots": int(
                ray.cluster_resources().get(
                    "GPU" if "num_gpus" in _ray_resources(cfg) else "CPU", 0
                )
            ),
        }
    )
    refs = {}
    for name, drafts in work.items():
        prob = problems[name]
        refs[
            remote.remote(
                os.path.abspath(prob.path),
                prob.source,
                [dataclasses.asdict(d) for d in drafts],
                cfg.verify_options(),
                cfg.protocol,
                cfg.agent.baseline,
            )
        ] = name
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        name = refs[ready[0]]
        try:
            results = ray.get(ready[0])
        except Exception as exc:  # RayTaskError wraps the task's exception
            cause = getattr(exc, "cause", None) or exc
            errors[name] = (
                str(cause).strip().splitlines()[-1] if str(cause).strip() else repr(cause)
            )
            emit({"event": "error", "problem": name, "message": errors[name]})
            continue
        for r in results:
            ev = _evaluated(r)
            bdir.write_evaluated(ev)
            emit({"event": "sample", "record": ev.record.to_dict()})


def _safe(on_event: Event | None) -> Event:
    def emit(e: dict[str, Any]) -> None:
        if on_event is None:
            return
        try:
            on_event(e)
        except Exception:  # progress display must never break a run
            log.debug("progress callback failed", exc_info=True)

    return emit
