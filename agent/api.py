"""The Python API: what the CLI does, as functions a host application can call.

    import agent

    verdict = agent.verify("examples/problems/relu.py", "examples/kernels/relu.py", trials=2)
    result = agent.optimize("examples/problems/relu.py", budget=4, chat_model=my_langchain_model)
    result = agent.repair(problem_text, failing_kernel_text, budget=4, backend="openai",
                          base_url="http://localhost:8000/v1")
    code = agent.generate_triton(pytorch_source, backend=my_backend)

Problems and kernels are accepted as a path *or* as source text (a string with a newline in it is
source text; anything else, and any `os.PathLike`, is a path). Domain errors are raised as
`tools.core.errors.TritonAgentError` subclasses (`BadInputError` for bad input, `BackendError` when the
LLM cannot be reached); they are never turned into exit codes here.

Keyword options are the fields of `agent.config.AgentConfig` (`trials`, `timeout_s`, `aot_target`,
`time_limit_s`, `runs_dir`, `model`, `base_url`, ...); `verify` and `profile` take only its
verification fields (`VERIFY_FIELDS`). Unknown keywords raise `TypeError`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.options import DEFAULTS

if TYPE_CHECKING:  # the heavy modules load on first call, so `import agent` stays cheap
    from tools.core.results import Verdict
    from tools.orchestrate.profile import ProfileResult

PathOrSource = str | os.PathLike[str]
"""A path to a `.py` file, or the file's text."""

Event = dict[str, Any]


def __getattr__(name: str) -> Any:
    """`VERIFY_FIELDS` is `agent.config`'s, loaded on first use (agent.config imports torch)."""
    if name == "VERIFY_FIELDS":
        from agent.config import VERIFY_FIELDS

        return VERIFY_FIELDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(kw_only=True)
class OptimizeResult:
    """The result of `optimize` / `repair`: the result object of docs/json.md, typed.

    `to_dict()` gives back exactly the JSON object `python -m agent optimize --json` prints
    (report.json); keys this version does not know yet are kept in `extra`.
    """

    schema_version: int
    command: str
    """`optimize` or `repair`."""
    status: str
    """`ok` (a correct kernel, and faster where timed) or `failed`."""
    correct: bool
    faster: bool | None
    """None when not timed (CPU)."""
    timed: bool
    run_id: str
    run_dir: str
    problem: str | None
    device: str
    best_kernel: str | None
    """Path of `best_kernel.py` (a drop-in `ModelNew`), None when no kernel was correct."""
    best: dict[str, Any] | None
    baselines: dict[str, Any] | None
    target_speedup: float
    baseline: str
    budget: dict[str, Any]
    attempts: list[dict[str, Any]]
    stop_reason: str | None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Result keys added after this class was written (kept, returned by `to_dict`)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def best_kernel_source(self) -> str | None:
        """The text of `best_kernel.py`, or None when no kernel was correct."""
        if not self.best_kernel:
            return None
        try:
            return Path(self.best_kernel).read_text(encoding="utf-8")
        except OSError:
            return None

    def to_dict(self) -> dict[str, Any]:
        data = {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"
        }
        return {**data, **self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OptimizeResult:
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        known.setdefault("notes", [])
        return cls(**known, extra=extra)


# ------------------------------------------------------------------------------------------
# Inputs: a path or source text


def is_source_text(value: PathOrSource) -> bool:
    """Source text has a newline; a path never does (and `os.PathLike` is always a path)."""
    return isinstance(value, str) and "\n" in value


def load_problem(problem: PathOrSource):
    """A `tools.core.problem.Problem` from a path or from source text (statically checked)."""
    from tools.core.problem import problem_from_source, read_problem

    if is_source_text(problem):
        return problem_from_source(str(problem), "problem.py")
    return read_problem(_path(problem, "problem"))


def load_kernel(kernel: PathOrSource) -> tuple[str, str]:
    """(source, path-for-messages) of a candidate given as a path or as source text."""
    from tools.core.problem import read_kernel

    if is_source_text(kernel):
        return str(kernel), "candidate.py"
    path = _path(kernel, "kernel")
    return read_kernel(path), path


def _path(value: Any, what: str) -> str:
    from tools.core.errors import BadInputError

    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value).strip():
        raise BadInputError(f"the {what} must be a path or source text, got {type(value).__name__}")
    return os.fspath(value)


def materialize(value: PathOrSource, kind: str, runs_dir: str) -> str:
    """A path for `value`: itself when it is a path, else the text saved under
    `<runs_dir>/inputs/` (kept, so a run started from text can still be resumed)."""
    if not is_source_text(value):
        return _path(value, kind)
    text = str(value)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = Path(runs_dir) / "inputs" / f"{kind}-{digest}.py"
    if not path.exists():
        from agent.rundir import write_atomic

        write_atomic(path, text)
    return str(path)


# ------------------------------------------------------------------------------------------
# verify / profile


def verify_options(**options: Any):
    """`tools.orchestrate.verify.VerifyOptions` from `AgentConfig`-style verification keywords."""
    from agent.config import VERIFY_FIELDS, AgentConfig

    unknown = sorted(set(options) - set(VERIFY_FIELDS))
    if unknown:
        raise TypeError(
            f"unknown verification option(s): {', '.join(unknown)}; known: {', '.join(VERIFY_FIELDS)}"
        )

    return AgentConfig(**options).verify_options()


def verify(
    problem: PathOrSource, kernel: PathOrSource, *, verifier: Any = None, **options: Any
) -> Verdict:
    """Verify one candidate against a problem; returns the `Verdict` (`.correct`, `.status`,
    `.feedback()`, `.to_dict()`). `options`: `VERIFY_FIELDS`, e.g. `trials=2, aot_target=None`.
    Pass a `tools.orchestrate.verify.Verifier` (`agent.evaluation.make_verifier`) to reuse its worker pool
    and reference cache across calls."""
    from agent.evaluation import verify_candidate

    prob = load_problem(problem)
    source, kpath = load_kernel(kernel)
    return verify_candidate(_verifier(verifier, options), prob, source, kpath)


def profile(
    problem: PathOrSource,
    kernel: PathOrSource,
    *,
    baseline: str = DEFAULTS["baseline"],
    verifier: Any = None,
    **options: Any,
) -> ProfileResult:
    """Verify, then time a candidate against eager and torch.compile (GPU). On a machine without
    a GPU the result's status is `unavailable`. `options`: `VERIFY_FIELDS`, or a `verifier`."""
    from agent.evaluation import profile_candidate
    from tools.orchestrate.profile import ProfileOptions

    prob = load_problem(problem)
    source, kpath = load_kernel(kernel)
    verifier = _verifier(verifier, options)
    return profile_candidate(verifier, prob, source, kpath, ProfileOptions(baseline=baseline))


def _verifier(verifier: Any, options: dict[str, Any]) -> Any:
    """The verifier given, else one for the verification keywords (not both)."""
    from agent.evaluation import make_verifier

    if verifier is None:
        return make_verifier(verify_options(**options))
    if options:
        raise TypeError("pass either a verifier or verification options, not both")
    return verifier


# ------------------------------------------------------------------------------------------
# optimize / repair


def optimize(
    problem: PathOrSource,
    *,
    budget: int = DEFAULTS["budget"],
    backend: Any = None,
    chat_model: Any = None,
    on_event: Callable[[Event], None] | None = None,
    **config: Any,
) -> OptimizeResult:
    """Draft, verify and refine kernels for `problem` until one is correct (and faster, on a GPU)
    or `budget` candidates are spent.

    `backend`: None (what `config` says: `model`, `base_url`, `replies`, else the compiler alone),
    a backend name (`"openai"`, `"replay"`, ...), or an object with the `agent.llm.LLMBackend`
    protocol. `chat_model`: a LangChain chat model, wrapped in `LangChainBackend`. `on_event`
    receives the progress events the CLI prints. `config`: `AgentConfig` fields.
    """
    return _run(
        problem,
        None,
        mode="optimize",
        budget=budget,
        backend=backend,
        chat_model=chat_model,
        on_event=on_event,
        config=config,
    )


def repair(
    problem: PathOrSource,
    kernel: PathOrSource,
    *,
    budget: int = DEFAULTS["budget"],
    backend: Any = None,
    chat_model: Any = None,
    on_event: Callable[[Event], None] | None = None,
    **config: Any,
) -> OptimizeResult:
    """Start from a failing `kernel`: it is attempt 0 (source `given`, not counted in `budget`),
    and its verdict is the first evidence the LLM reads. Same options as `optimize`."""
    return _run(
        problem,
        kernel,
        mode="repair",
        budget=budget,
        backend=backend,
        chat_model=chat_model,
        on_event=on_event,
        config=config,
    )


def make_config(**config: Any):
    """An `AgentConfig`; unknown keywords raise TypeError naming them."""
    from agent.config import AgentConfig

    names = {f.name for f in dataclasses.fields(AgentConfig)}
    unknown = sorted(set(config) - names)
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(unknown)}; see agent.config.AgentConfig")
    return AgentConfig(**config)


def resolve_backend(backend: Any, chat_model: Any, config: dict[str, Any]) -> Any:
    """The backend object to hand to the runner (None: let the config decide).
    A backend *name* is moved into `config["backend"]`."""
    from tools.core.errors import BadInputError

    if chat_model is not None:
        if backend is not None:
            raise BadInputError("pass either backend= or chat_model=, not both")
        from agent.llm.langchain_backend import LangChainBackend

        return LangChainBackend(chat_model)
    if isinstance(backend, str):
        config["backend"] = backend
        return None
    if backend is not None and not callable(getattr(backend, "generate", None)):
        raise BadInputError(
            f"backend must be a name or an object with generate(), got {type(backend).__name__}"
        )
    return backend


def _run(
    problem: PathOrSource,
    kernel: PathOrSource | None,
    *,
    mode: str,
    budget: int,
    backend: Any,
    chat_model: Any,
    on_event: Callable[[Event], None] | None,
    config: dict[str, Any],
) -> OptimizeResult:
    from agent.runner import run

    config = dict(config)
    resume = config.pop("resume", None)
    llm = resolve_backend(backend, chat_model, config)
    cfg = make_config(budget=budget, **config)
    problem_path = None if resume else materialize(problem, "problem", cfg.runs_dir)
    kernel_path = (
        materialize(kernel, "kernel", cfg.runs_dir) if kernel is not None and not resume else None
    )
    result = run(
        problem_path,
        cfg,
        resume=resume,
        on_event=on_event,
        backend=llm,
        start_kernel=kernel_path,
        mode=mode,
    )
    return OptimizeResult.from_dict(result)


# ------------------------------------------------------------------------------------------
# Embedding the graph in a host's LangGraph application


@dataclass
class PreparedRun:
    """What `build_graph()` needs to run inside a host's graph: the runtime `context` (pass as
    `context=`) and the initial `state`; `result(final_state)` types the outcome."""

    context: Any
    """`agent.context.RunContext`."""
    state: dict[str, Any]

    def result(self, final_state: dict[str, Any]) -> OptimizeResult:
        from agent.report import result_object

        return OptimizeResult.from_dict(result_object(self.context, final_state))


def prepare_run(
    problem: PathOrSource,
    kernel: PathOrSource | None = None,
    *,
    backend: Any = None,
    chat_model: Any = None,
    on_event: Callable[[Event], None] | None = None,
    **config: Any,
) -> PreparedRun:
    """Set up a run without running it, for a host that invokes the compiled graph itself
    (as a subgraph, say): creates the run directory, the verifier and the backend. With
    `kernel` the run is a repair starting from it. Options as for `optimize`.

        kernel_agent = agent.build_graph()
        prepared = agent.prepare_run("problem.py", chat_model=model, budget=4)
        final = kernel_agent.invoke(prepared.state, context=prepared.context)
        result = prepared.result(final)
    """
    from agent.runner import create_rundir, initial_state, make_context, new_rundir

    options = dict(config)
    llm = resolve_backend(backend, chat_model, options)
    cfg = make_config(**options)
    prob = load_problem(problem)
    path = materialize(problem, "problem", cfg.runs_dir)
    start_code = load_kernel(kernel)[0] if kernel is not None else None
    mode = "repair" if kernel is not None else "optimize"
    rundir = new_rundir(path, cfg)
    ctx = make_context(cfg, rundir, backend=llm, mode=mode, on_event=on_event)
    create_rundir(rundir, path, cfg, mode)  # only once the backend and verifier exist
    state = initial_state(path, prob.source, cfg, start_code)
    return PreparedRun(context=ctx, state=state)


# ------------------------------------------------------------------------------------------
# generate_triton: KernelLLM's helper


def generate_triton(
    code: str,
    *,
    backend: Any = None,
    chat_model: Any = None,
    model: str | None = None,
    base_url: str | None = None,
    temperature: float = DEFAULTS["temperature"],
    top_p: float = DEFAULTS["top_p"],
    max_tokens: int = DEFAULTS["max_tokens"],
    prompt_template: str | None = None,
) -> str:
    """PyTorch source in, one Triton candidate out, like KernelLLM's `generate_triton`: render
    the KernelLLM prompt (or the chat prompt for a chat backend), draw one sample, extract the
    code. Returns the extracted module, or the raw reply when it holds no code. Nothing is
    verified: pass the text to `verify`.

    `backend`: an `LLMBackend` object or a backend name; None picks one from `model`/`base_url`
    (and TRITON_AGENT_BASE_URL), as `make_backend("auto")` does.
    """
    from agent.extract import extract_code
    from agent.llm import make_backend
    from agent.prompts import render_chat, render_kernelllm
    from tools.core.errors import BadInputError

    if not isinstance(code, str) or not code.strip():
        raise BadInputError("generate_triton needs PyTorch source code")
    if chat_model is not None or (backend is not None and not isinstance(backend, str)):
        llm = resolve_backend(backend, chat_model, {})
    else:
        llm = make_backend(backend or "auto", model=model, base_url=base_url)
    if getattr(llm, "kind", "completion") == "chat":
        prompt: Any = render_chat(code)
    else:
        prompt = render_kernelllm(code, prompt_template)
    replies = llm.generate(prompt, n=1, temperature=temperature, top_p=top_p, max_tokens=max_tokens)
    reply = replies[0] if replies else ""
    return extract_code(reply) or reply
