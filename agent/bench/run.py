"""Running a benchmark: the thread executor (one Verifier, a thread pool over its sandbox
slots), the Ray executor (one task per problem), the loop mode (the agent per problem), and
the clean stop on SIGINT."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agent.bench.config import _RESUME_KEYS, BenchConfig, Event
from agent.bench.records import Draft, Evaluated, SampleRecord, evaluate_sample, peak_memory
from agent.bench.report import rebuild_report
from agent.bench.store import BenchDir, discover_problems
from agent.config import AgentConfig
from agent.evaluation import kill_jobs
from agent.rundir import write_atomic
from tools.errors import BackendError, BadInputError, TritonAgentError
from tools.evaluate import DEFAULT_BASELINE
from tools.problem import Problem, read_problem
from tools.roofline import slowdown_reason
from tools.verify import Verifier, VerifyOptions

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
    diff = [k for k in _RESUME_KEYS if prev.get(k) != now.get(k)]
    if diff:
        raise BadInputError(
            f"{bdir.path} holds a benchmark with other settings ({', '.join(f'{k}: {prev.get(k)!r} -> {now.get(k)!r}' for k in diff)}); "
            "rerun with the same settings to resume, or choose another --out"
        )


def _make_backend(cfg: BenchConfig) -> Any:
    from agent.llm import backend_for

    return backend_for(cfg.agent)


def _run_sample_mode(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, backend: Any, emit: Event
) -> dict[str, str]:
    """Draw (in this thread, problem after problem: a replay script stays in order) and
    evaluate (in parallel) every candidate not yet done. Returns per-problem errors."""
    errors: dict[str, str] = {}
    n = cfg.per_problem
    work: dict[str, list[Draft]] = {}
    todo = {}
    if cfg.compiler_only:  # a problem that could not run last time waits behind the others
        order = sorted(problems, key=lambda name: (bdir.path / name / "error.json").exists())
        problems = {name: problems[name] for name in order}
    for name in problems:
        done = bdir.done_samples(name)
        missing = [i for i in range(n) if i not in done]
        todo[name] = missing
        emit({"event": "problem", "problem": name, "done": len(done), "todo": len(missing)})
    if not any(todo.values()):
        return errors
    llm = None
    if not cfg.compiler_only:
        llm = backend if backend is not None else _make_backend(cfg)

    def drafts_for(name: str) -> list[Draft]:
        prob = problems[name]
        drafts: list[Draft] = []
        need: list[int] = []
        for i in todo[name]:
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

    if cfg.executor == "ray":
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

    verifier = Verifier(cfg.verify_options())
    slots = verifier.sandbox.slots
    emit({"event": "start", "device": verifier.device, "slots": slots})
    lock = threading.Lock()
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
        for name in problems:
            if not todo[name]:
                continue
            try:
                drafts = drafts_for(name)
            except TritonAgentError as exc:
                errors[name] = str(exc)
                emit({"event": "error", "problem": name, "message": str(exc)})
                if isinstance(exc, BackendError):
                    # Evaluate what was drawn; the rest stays to do (a rerun resumes).
                    drafts = [d for i in todo[name] if (d := bdir.read_draft(name, i))]
                    for d in drafts:
                        futures[pool.submit(task, d)] = d
                    break
                continue
            for d in drafts:
                futures[pool.submit(task, d)] = d
        for fut in cf.as_completed(futures):
            d = futures[fut]
            try:
                ev = fut.result()
            except TritonAgentError as exc:  # the problem itself (reference) cannot run
                with lock:
                    errors.setdefault(d.problem, str(exc))
                emit({"event": "error", "problem": d.problem, "message": str(exc)})
                continue
            if ev is not None:
                emit({"event": "sample", "record": ev.record.to_dict()})
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_running(futures, stopping, cfg.stop_grace_s, emit)
        raise
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return errors


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
    from tools.limits import Limits
    from tools.problem import problem_from_source
    from tools.sandbox import Sandbox
    from tools.verify import resolve_device

    device = resolve_device(verify_options.device)
    limits = Limits(timeout_s=verify_options.timeout_s, memory_mb=verify_options.memory_mb)
    # On CUDA: every GPU this process sees (ids or UUIDs in CUDA_VISIBLE_DEVICES alike)
    sandbox = Sandbox(
        device=device, max_workers=1, limits=limits, slots_per_gpu=verify_options.jobs_per_gpu
    )
    verifier = Verifier(verify_options, sandbox=sandbox)
    problem = problem_from_source(problem_source, problem_path)
    ds = [Draft(**d) for d in drafts]
    with cf.ThreadPoolExecutor(max_workers=sandbox.slots) as pool:
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


def _ray_init(address: str | None) -> tuple[Any, bool]:
    """The `ray` module, initialised (a local instance without an address); and whether this
    call started it (the caller shuts it down again)."""
    try:
        import ray
    except ImportError as exc:
        raise BadInputError("--executor ray needs Ray: pip install 'triton-agent[ray]'") from exc
    started = not ray.is_initialized()
    if started:
        root = str(Path(__file__).resolve().parent.parent)
        if address:
            import agent
            import tools

            ray.init(
                address=address, runtime_env={"py_modules": [agent, tools]}, log_to_driver=False
            )
        else:
            path = os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)
            ray.init(
                runtime_env={"env_vars": {"PYTHONPATH": path}},
                log_to_driver=False,
                include_dashboard=False,
            )
    return ray, started


def _ray_resources(cfg: BenchConfig) -> dict[str, Any]:
    from tools.verify import resolve_device

    return {"num_gpus": 1} if resolve_device(cfg.agent.device) == "cuda" else {"num_cpus": 1}


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


# -- loop mode ----------------------------------------------------------------------------------


def loop_problem(
    problem_path: str,
    agent_cfg: AgentConfig,
    runs_dir: str,
    backend: Any = None,
    on_event: Event | None = None,
    verifier: Verifier | None = None,
) -> list[dict[str, Any]]:
    """Run the agent on one problem; return its attempts as sample entries (record, verdict,
    response, code). Used in-process and as a Ray task's body. `verifier`: one shared with
    the other problems' loops (their jobs share its slots)."""
    from agent.runner import run

    cfg = dataclasses.replace(agent_cfg, runs_dir=runs_dir, run_id="run")
    started_at, t0 = round(time.time(), 3), time.monotonic()
    result = run(problem_path, cfg, backend=backend, on_event=on_event, verifier=verifier)
    # The loop does not time its attempts apart: each gets an even share of the run.
    share = round((time.monotonic() - t0) / max(len(result["attempts"]), 1), 3)
    ended_at = round(time.time(), 3)
    name = Path(problem_path).stem
    device = result.get("device", "cpu")
    out = []
    for i, a in enumerate(result["attempts"]):
        ad = Path(result["run_dir"]) / "attempts" / f"{a['index']:02d}"
        meta = json.loads((ad / "attempt.json").read_text())
        speedups = {k: float(v) for k, v in (meta.get("speedups") or {}).items() if v}
        verdict = json.loads((ad / "verdict.json").read_text())
        rec = SampleRecord(
            problem=name,
            sample=i,
            source=meta["source"],
            status=meta["status"],
            correct=bool(meta["correct"]),
            compiled=bool(verdict.get("compiled")),
            speedups=speedups,
            summary=meta.get("summary") or "",
            device="cuda" if device == "cuda" else "cpu",
            profile_status=(meta.get("profile") or {}).get("status"),
            duration_s=share,
            wall_s=share,
            started_at=started_at,
            ended_at=ended_at,
            memory=peak_memory(verdict, meta.get("profile")),
            limit=(slowdown_reason(meta.get("profile")) or "") if meta["correct"] else "",
        )
        out.append(
            {
                "record": rec.to_dict(),
                "verdict": verdict,
                "profile": meta.get("profile"),
                "draft": {
                    "problem": name,
                    "sample": i,
                    "source": meta["source"],
                    "response": (ad / "response.txt").read_text()
                    if (ad / "response.txt").exists()
                    else "",
                    "code": (ad / "kernel.py").read_text() if (ad / "kernel.py").exists() else None,
                },
            }
        )
    return out


def _loop_problem_ray(problem_path: str, agent_cfg: AgentConfig) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="ta-bench-loop-") as tmp:
        return loop_problem(problem_path, agent_cfg, tmp)


def _run_loop_mode(
    problems: dict[str, Problem], cfg: BenchConfig, bdir: BenchDir, backend: Any, emit: Event
) -> dict[str, str]:
    """One agent run per problem not yet done (OUT/<problem>/done.json). A problem interrupted
    mid-run starts over (its partial attempts are dropped)."""
    errors: dict[str, str] = {}
    agent_cfg = dataclasses.replace(cfg.agent, budget=cfg.samples, compiler_seed=cfg.compiler_seed)
    todo = []
    for name in problems:
        if (bdir.path / name / "done.json").exists():
            emit({"event": "problem", "problem": name, "done": 1, "todo": 0})
            continue
        for sd in (bdir.path / name).glob("[0-9]*"):
            shutil.rmtree(sd, ignore_errors=True)
        shutil.rmtree(bdir.path / name / "run", ignore_errors=True)
        todo.append(name)
        emit({"event": "problem", "problem": name, "done": 0, "todo": 1})

    def store(name: str, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            ev = _evaluated(e)
            bdir.write_evaluated(ev)
            emit({"event": "sample", "record": ev.record.to_dict()})
        bdir.write_json(Path(name) / "done.json", {"attempts": len(entries)})

    if cfg.executor == "ray":
        if agent_cfg.replies or agent_cfg.backend == "replay" or backend is not None:
            raise BadInputError(
                "--mode loop --executor ray builds the LLM backend inside each task; "
                "a replay script or an in-process backend cannot be shared that way"
            )
        ray, started = _ray_init(cfg.ray_address)
        try:
            remote = ray.remote(_loop_problem_ray).options(**_ray_resources(cfg), max_retries=0)
            refs = {remote.remote(os.path.abspath(problems[n].path), agent_cfg): n for n in todo}
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                name = refs[ready[0]]
                try:
                    store(name, ray.get(ready[0]))
                except Exception as exc:  # RayTaskError wraps the task's exception
                    cause = getattr(exc, "cause", None) or exc
                    errors[name] = str(cause)
                    emit({"event": "error", "problem": name, "message": str(cause)})
        finally:
            if started:
                ray.shutdown()
        return errors

    if not todo:
        return errors
    llm = backend if backend is not None else _make_backend(cfg)
    verifier = Verifier(cfg.verify_options())
    scripted = agent_cfg.replies is not None or agent_cfg.backend == "replay"
    width = cfg.loop_jobs or (1 if scripted else verifier.sandbox.slots)
    emit(
        {
            "event": "start",
            "device": verifier.device,
            "slots": verifier.sandbox.slots,
            "loops": min(width, len(todo)),
        }
    )
    loops = _Loops(problems, todo, agent_cfg, bdir, _shared_backend(llm), verifier, width)
    try:
        for name, outcome in loops.results():
            if outcome == "started":
                emit({"event": "drafting", "problem": name, "samples": cfg.samples})
            elif isinstance(outcome, TritonAgentError):
                errors[name] = str(outcome)
                emit({"event": "error", "problem": name, "message": str(outcome)})
            else:
                store(name, outcome)
    except KeyboardInterrupt:
        for name, entries in loops.stop(emit):  # loops that had finished are kept
            store(name, entries)
        raise
    return errors


class LoopStopped(KeyboardInterrupt):
    """Raised in a loop-mode bench's worker thread where its loop would start a sandbox job
    after the bench was interrupted: the loop unwinds as from Ctrl-C (SIGINT reaches the main
    thread only), and its problem starts over on resume."""


LOOP_STOP_WAIT_S = 5.0
"""On SIGINT, how long a loop-mode bench waits for its running loops to unwind (their jobs
killed, no new one started) before it writes the report; a loop still waiting on the LLM then
is left behind (a daemon thread: it does not hold the process up)."""


class _Loops:
    """The agent's loop over several problems at once (loop mode, thread executor): `width`
    daemon threads take problems in order, each running one problem's loop at a time, all on
    one Verifier, so every loop's jobs share its sandbox's slots (sample mode's rule: at most
    one job per slot, a timing job alone on its GPU)."""

    def __init__(
        self,
        problems: dict[str, Problem],
        todo: list[str],
        agent_cfg: AgentConfig,
        bdir: BenchDir,
        llm: Any,
        verifier: Verifier,
        width: int,
    ) -> None:
        self._problems, self._cfg, self._bdir = problems, agent_cfg, bdir
        self._llm, self._verifier = llm, verifier
        self._todo = list(todo)
        self._lock = threading.Lock()
        self._events: list[tuple[str, Any]] = []
        self._ready = threading.Condition(self._lock)
        self._running: set[str] = set()
        self._left = len(todo)
        self._stop = threading.Event()
        _stop_gate(verifier.sandbox, self._stop)
        self._threads = [
            threading.Thread(target=self._work, name=f"bench-loop-{i}", daemon=True)
            for i in range(max(1, min(width, len(todo))))
        ]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._todo:
                    return
                name = self._todo.pop(0)
                self._running.add(name)
                self._post(name, "started")
            outcome: Any
            try:
                outcome = loop_problem(
                    self._problems[name].path,
                    self._cfg,
                    str(self._bdir.path / name),
                    backend=self._llm,
                    verifier=self._verifier,
                )
            except LoopStopped:
                outcome = None
            except TritonAgentError as exc:
                outcome = exc
            except BaseException as exc:  # noqa: BLE001 - a bug: raised again in the main thread
                outcome = exc
            with self._lock:
                self._running.discard(name)
                if not self._stop.is_set():  # after the stop, nothing more is recorded
                    self._post(name, outcome)

    def _post(self, name: str, outcome: Any) -> None:
        """(holding the lock)"""
        if outcome != "started":
            self._left -= 1
        self._events.append((name, outcome))
        self._ready.notify_all()

    def results(self) -> Iterator[tuple[str, Any]]:
        """In the main thread: (problem, "started" | its entries | its TritonAgentError) as they
        come, until every problem is done. Waits in short steps, so Ctrl-C is raised here."""
        while True:
            with self._lock:
                if not self._events and self._left:
                    self._ready.wait(timeout=0.2)
                events, self._events = self._events, []
                left = self._left
            for name, outcome in events:
                if isinstance(outcome, BaseException) and not isinstance(outcome, TritonAgentError):
                    self._stop.set()
                    kill_jobs()
                    raise outcome
                yield name, outcome
            if not left and not events:
                return

    def stop(self, emit: Event) -> list[tuple[str, list[dict[str, Any]]]]:
        """After SIGINT (in the main thread): the entries of loops that had finished (not yet
        handed out), then no job starts any more, the running ones are killed, and the loops
        get LOOP_STOP_WAIT_S to unwind."""
        with self._lock:
            self._stop.set()
            finished = [(n, o) for n, o in self._events if isinstance(o, list)]
            self._events = []
            running = len(self._running)
        emit({"event": "stopping", "running": running, "grace_s": 0.0, "loops": True})
        deadline = time.monotonic() + LOOP_STOP_WAIT_S
        try:
            while any(t.is_alive() for t in self._threads) and time.monotonic() < deadline:
                kill_jobs()  # also a job started between a loop's gate and the stop
                for t in self._threads:
                    t.join(timeout=0.1)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
            kill_jobs()
        return finished


def _stop_gate(sandbox: Any, stop: threading.Event) -> None:
    """Once `stop` is set, a job asked of `sandbox` raises LoopStopped (before and after
    waiting for its slot) instead of starting. `Sandbox.run` and the Verifier both take their
    slots through `sandbox.slot`, so gating that one method gates every job."""
    take = sandbox.slot

    @contextlib.contextmanager
    def slot(**kw: Any) -> Iterator[Any]:
        if stop.is_set():
            raise LoopStopped
        with take(**kw) as s:
            if stop.is_set():
                raise LoopStopped
            yield s

    sandbox.slot = slot


def _shared_backend(llm: Any) -> Any:
    """The backend as several loops share it: an OpenAI-compatible server batches concurrent
    requests itself; any other (an in-process engine, a replay script) is called by one loop at
    a time (the loops' evaluations still overlap). None (the compiler drafts) stays None."""
    from agent.llm.openai_backend import OpenAIBackend

    if llm is None or isinstance(llm, OpenAIBackend):
        return llm
    return _OneCallAtATime(llm)


class _OneCallAtATime:
    """A backend whose `generate` is taken by one thread at a time; everything else is its."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._lock = threading.Lock()

    def generate(self, *args: Any, **kwargs: Any) -> list[str]:
        with self._lock:
            return self._backend.generate(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def _safe(on_event: Event | None) -> Event:
    def emit(e: dict[str, Any]) -> None:
        if on_event is None:
            return
        try:
            on_event(e)
        except Exception:  # progress display must never break a run
            log.debug("progress callback failed", exc_info=True)

    return emit


def _evaluated(d: dict[str, Any]) -> Evaluated:
    """An evaluation handed back as plain data (by a Ray task or the loop's run)."""
    return Evaluated(
        record=SampleRecord.from_dict(d["record"]),
        verdict=d["verdict"],
        profile=d["profile"],
        draft=Draft(**d["draft"]),
    )
