"""The loop mode of a benchmark: the agent (`agent.runner.run`) per problem, several problems'
loops at once (`--loop-jobs`) on one shared Verifier and its slots, or one Ray task per problem;
the stop on SIGINT between loops."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.bench.config import BenchConfig, Event
from agent.bench.records import SampleRecord, code_precision, peak_memory
from agent.bench.shared import _evaluated, _make_backend, _ray_init, _ray_resources
from agent.bench.store import BenchDir
from agent.config import AgentConfig
from agent.evaluation import kill_jobs, make_verifier
from tools.checks.roofline import slowdown_reason
from tools.core.errors import BadInputError, TritonAgentError
from tools.core.problem import Problem
from tools.orchestrate.verify import Verifier

log = logging.getLogger(__name__)


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
            precision=code_precision(
                (ad / "kernel.py").read_text() if (ad / "kernel.py").exists() else None
            ),
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
    verifier = make_verifier(cfg.verify_options())
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
    a time (the loops' evaluations still overlap). None (the compiler drafts) stays None.
    The OpenAI client is imported only for a backend that can be one: a compiler-only bench
    needs no `openai` package (on the H200 its wheel set lacked `httpx2`, and the import failed
    before any problem ran)."""
    if llm is None:
        return llm
    if type(llm).__module__ == "agent.llm.openai_backend":
        from agent.llm.openai_backend import OpenAIBackend

        if isinstance(llm, OpenAIBackend):
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
