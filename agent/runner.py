"""Run the graph: build the backend, then create or resume a run directory, checkpoint to SQLite."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from agent.config import AgentConfig, check_run_id
from agent.context import RunContext
from agent.drafters import CompilerDrafter
from agent.evaluation import make_verifier
from agent.graph import build_graph
from agent.interrupt import sigint_held
from agent.llm import backend_for
from agent.report import result_object
from agent.rundir import RunDir, new_run_id
from tools.core.errors import BackendConfigError, BadInputError, TritonAgentError
from tools.core.problem import Problem, read_kernel, read_problem
from tools.orchestrate.verify import Verifier


def new_rundir(problem_path: str, config: AgentConfig) -> RunDir:
    """The run directory of a new run, not created yet (see `create_rundir`); an existing one is
    refused, so a run never writes over another (continuing one is `--resume`)."""
    rundir = RunDir(config.runs_dir, config.run_id or new_run_id(problem_path))
    if rundir.path.exists():
        raise BadInputError(
            f"run {rundir.run_id!r} already exists under {config.runs_dir}/; continue it with"
            f" --resume {rundir.run_id}, or choose another --run-id"
        )
    return rundir


def resumed_rundir(
    resume: str, problem_path: str | None, config: AgentConfig
) -> tuple[RunDir, dict[str, Any]]:
    """The run directory `--resume` names and its saved config, refusing a problem or `--run-id`
    given with it that is not the run's (they would otherwise be silently ignored)."""
    check_run_id(resume, "--resume")
    if config.run_id is not None and config.run_id != resume:
        raise BadInputError(f"--run-id {config.run_id} differs from --resume {resume}")
    rundir = RunDir.existing(config.runs_dir, resume)
    saved = rundir.read_json("config.json")
    recorded = saved.get("_problem_path") if isinstance(saved, dict) else None
    if problem_path is not None and recorded is not None:
        if Path(problem_path).resolve() != Path(recorded).resolve():
            raise BadInputError(
                f"run {resume!r} is of problem {recorded}, not {problem_path};"
                " leave the problem out to resume it, or start a new run"
            )
    return rundir, saved


def create_rundir(rundir: RunDir, problem_path: str, config: AgentConfig, mode: str) -> None:
    """Create the run directory, with the config that `--resume` will read back. Called once the
    backend and verifier exist, so a run that cannot start leaves no directory behind."""
    rundir.mkdir()
    rundir.write_json(
        "config.json", {**config.to_dict(), "_problem_path": problem_path, "_mode": mode}
    )


def discard_if_empty(rundir: RunDir) -> None:
    """Remove a new run's directory when it evaluated nothing (it has nothing to resume)."""
    attempts = rundir.path / "attempts"
    if not attempts.is_dir() or not any(attempts.iterdir()):
        shutil.rmtree(rundir.path, ignore_errors=True)


def make_context(
    config: AgentConfig,
    rundir: RunDir,
    *,
    backend: Any = None,
    mode: str = "optimize",
    on_event: Callable[[dict[str, Any]], None] | None = None,
    verifier: Verifier | None = None,
) -> RunContext:
    """The live objects of a run: LLM backend, verifier (and its sandbox), compiler drafter.
    `verifier`: one shared with other runs (a loop-mode bench runs several problems at once on
    one Verifier, so their jobs share its slots); else a new one from the config."""
    llm = backend if backend is not None else backend_for(config)
    verifier = verifier if verifier is not None else make_verifier(config.verify_options())
    drafter = None
    if mode == "optimize" and (llm is None or config.compiler_seed):
        drafter = CompilerDrafter(
            verifier.sandbox, verifier.device, generalize=verifier.options.generalize
        )
    if llm is None and drafter is None:
        if mode == "repair":  # the compiler drafts from the problem, it does not repair
            raise BackendConfigError(
                "repair needs an LLM backend to revise the kernel: pass --base-url URL (an "
                "OpenAI-compatible server), --model DIR (local weights) or --replies FILE; "
                "without a model, `optimize` drafts with the compiler instead"
            )
        raise BackendConfigError(
            "nothing can draft candidates: configure an LLM backend or enable the compiler"
        )
    return RunContext(
        config=config,
        verifier=verifier,
        rundir=rundir,
        backend=llm,
        drafter=drafter,
        on_event=on_event or (lambda e: None),
        mode=mode,
    )


def initial_state(
    problem_path: str, problem_source: str, config: AgentConfig, start_code: str | None = None
) -> dict[str, Any]:
    """The graph's input for a new run."""
    return {
        "problem_path": problem_path,
        "problem_source": problem_source,
        "start_code": start_code,
        "attempts": [],
        "pending": [],
        "best": None,
        "budget_left": config.budget,
        "round": 0,
        "llm_samples_used": 0,
        "tuned": False,
        "stop_reason": None,
        "notes": [],
    }


def _invoke(graph: Any, state: Any, thread: dict[str, Any], ctx: RunContext) -> None:
    """Run the graph; on Ctrl-C, checkpoint the attempts the interrupted node had finished (as
    if drafting had just ended with the rest still pending), so `--resume` continues there.

    Ctrl-C raises only inside a node (`agent.interrupt.sigint_held`): between nodes LangGraph
    saves a node's writes, then its checkpoint, and a KeyboardInterrupt there cut that short. So
    the latest checkpoint is the one the interrupted node started from (where this process
    handles SIGINT itself: the CLI, or Python's default action; see also `finished`)."""
    ctx.interrupted = None
    with sigint_held():  # a second Ctrl-C during the write below waits for it too
        try:
            graph.invoke(state, thread, context=ctx, durability="sync")
        except KeyboardInterrupt:
            interrupted, ctx.interrupted = ctx.interrupted, None
            if interrupted is not None:
                graph.update_state(thread, interrupted, as_node="draft")
            raise


def has_checkpoint(rundir: RunDir) -> bool:
    """Whether the run's database holds a checkpoint: a run interrupted between making its
    directory and the graph's first checkpoint has none, and nothing to resume."""
    if not rundir.checkpoint_db.exists():
        return False
    with closing(sqlite3.connect(str(rundir.checkpoint_db), check_same_thread=False)) as conn:
        thread = {"configurable": {"thread_id": rundir.run_id}}
        return SqliteSaver(conn).get_tuple(thread) is not None


def finished(snapshot: Any) -> bool:
    """Whether a checkpointed run has reached its end. `snapshot.next` alone does not say: it
    leaves out a node whose writes were saved without the checkpoint after it (a process killed
    between the two, or interrupted by a host's own SIGINT handler), so a run with budget left
    read as finished; that node is still among `snapshot.tasks`, and resuming applies its
    writes and goes on."""
    return not snapshot.next and not snapshot.tasks


def run(
    problem_path: str | None,
    config: AgentConfig,
    *,
    resume: str | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    backend: Any = None,
    start_kernel: str | None = None,
    mode: str = "optimize",
    verifier: Verifier | None = None,
) -> dict[str, Any]:
    """Optimize (or repair, with `start_kernel`) one problem; returns the result object.

    `backend` overrides the configured one (a host application's LangChain chat model wrapped in
    `agent.llm.LangChainBackend`, say). `resume` continues a run from its checkpoint.
    `verifier`: a Verifier shared with other runs (see `make_context`).
    """
    if resume:
        rundir, config, mode = _resumed(resume, problem_path, config, mode)
        problem, start_code = None, None
    else:
        problem, start_code, rundir = _new(problem_path, config, mode, start_kernel)
    ctx = make_context(
        config, rundir, backend=backend, mode=mode, on_event=on_event, verifier=verifier
    )
    created = not resume
    if created:
        create_rundir(rundir, problem_path, config, mode)

    try:
        with closing(sqlite3.connect(str(rundir.checkpoint_db), check_same_thread=False)) as conn:
            graph = build_graph(checkpointer=SqliteSaver(conn))
            thread = {"configurable": {"thread_id": rundir.run_id}}
            if resume:
                return _continue(graph, thread, ctx)
            initial = initial_state(problem_path, problem.source, config, start_code)
            _start(graph, initial, thread, ctx)
            return result_object(ctx, graph.get_state(thread).values)
    except TritonAgentError:
        # A problem that fails once it runs (get_inputs raising, too large for the CPU, ...), a
        # backend that fails on its first call: a new run that evaluated nothing leaves no
        # directory behind (the connection is closed by now).
        if created:
            discard_if_empty(rundir)
        raise
    except KeyboardInterrupt:
        # Ctrl-C between making the directory and the first checkpoint: a directory that
        # `--resume` would read as a finished run. Gone, as the CLI then says.
        if created and not has_checkpoint(rundir):
            shutil.rmtree(rundir.path, ignore_errors=True)
        raise


def _resumed(
    resume: str, problem_path: str | None, config: AgentConfig, mode: str
) -> tuple[RunDir, AgentConfig, str]:
    """The run `--resume` names, its saved config (in place of the one given, but for the runs
    directory) and its mode."""
    rundir, saved = resumed_rundir(resume, problem_path, config)
    try:
        config = AgentConfig.from_dict(saved, runs_dir=config.runs_dir)
    except (AttributeError, TypeError, BadInputError) as e:  # not a config this version wrote
        raise BadInputError(f"{rundir.path / 'config.json'}: not a run config ({e})") from e
    return rundir, config, saved.get("_mode", mode)


def _new(
    problem_path: str | None, config: AgentConfig, mode: str, start_kernel: str | None
) -> tuple[Problem, str | None, RunDir]:
    """A new run's problem, its starting kernel (repair) and run directory (not created yet),
    checked before anything is created."""
    if problem_path is None:
        raise BadInputError("a problem file is required (or --resume RUN_ID)")
    if mode == "repair" and not start_kernel:
        raise BadInputError("repair needs the failing kernel file (or --resume RUN_ID)")
    problem = read_problem(problem_path)  # static checks before anything is created
    start_code = read_kernel(start_kernel) if start_kernel else None
    return problem, start_code, new_rundir(problem_path, config)


def _continue(graph: Any, thread: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Resume a run from its latest checkpoint (a finished one is only reported); the result
    object."""
    snapshot = graph.get_state(thread)
    if snapshot.metadata is None:  # no checkpoint: it would read as finished
        raise BadInputError(
            f"run {ctx.rundir.run_id!r} was stopped before its first checkpoint: it has "
            f"nothing to resume; remove {ctx.rundir.path} and run the command again"
        )
    values = snapshot.values or {}
    if finished(snapshot):
        ctx.emit(
            "resume",
            finished=True,
            attempts=len(values.get("attempts") or []),
            message="the run had already finished: nothing to do",
        )
        return result_object(ctx, values)
    used = values.get("llm_samples_used", 0)
    if used and hasattr(ctx.backend, "skip"):
        ctx.backend.skip(used)  # a replay script continues where the killed run stopped
    ctx.emit("resume", attempts=len(values.get("attempts") or []), next=list(snapshot.next))
    _invoke(graph, None, thread, ctx)
    return result_object(ctx, graph.get_state(thread).values)


def _start(graph: Any, initial: dict[str, Any], thread: dict[str, Any], ctx: RunContext) -> None:
    """Run a new run's graph from its initial state."""
    llm = ctx.backend
    ctx.emit(
        "start",
        run_id=ctx.rundir.run_id,
        run_dir=str(ctx.rundir.path),
        device=ctx.verifier.device,
        backend=getattr(llm, "name", None) if llm is not None else "compiler",
    )
    _invoke(graph, initial, thread, ctx)
