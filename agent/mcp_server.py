"""`python -m agent mcp`: the tools as an MCP server over stdio (official `mcp` SDK, 2.x API).

Tools: `verify`, `profile`, `optimize`, `repair`. `problem` and `kernel` are a path (resolved
against the server's working directory) or the file's source text. Results are structured:
`verify` returns the Verdict dict, `profile` the ProfileResult dict, `optimize`/`repair` the run's
result object (schemas in docs/json.md). `optimize` and `repair` report each loop event as an MCP
progress notification when the client asked for progress. Bad input comes back as a tool error
carrying the message; the server keeps running.

Stdout is the protocol channel: the SDK moves fd 1 to stderr while it serves, so anything a
worker or a candidate kernel prints cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from agent.options import BACKENDS, BY_NAME, DEFAULTS, field_constraints
from agent.progress import drafting_what
from tools.core.errors import BadInputError, TritonAgentError

ProblemArg = Annotated[
    str, Field(description="Problem file (KernelBench format): a path, or the file's source text.")
]
KernelArg = Annotated[
    str,
    Field(
        description="Candidate kernel file defining ModelNew: a path, or the file's source text."
    ),
]
# ranges, help and defaults from the option table (agent.options), like the CLI's flags
Trials = Annotated[int, Field(**field_constraints("trials"))]
Timeout = Annotated[float, Field(**field_constraints("timeout_s"))]
Target = Annotated[
    str | None,
    Field(
        description="On CPU, also compile kernels ahead of time for this CUDA target (e.g. sm_90); null to skip."
    ),
]
Atol = Annotated[float | None, Field(**field_constraints("atol"))]
Rtol = Annotated[float | None, Field(**field_constraints("rtol"))]
Preset = Literal[BY_NAME["tolerance_preset"].choices]  # type: ignore[valid-type]
Policy = Literal[BY_NAME["policy"].choices]  # type: ignore[valid-type]
Precision = Literal[BY_NAME["precision"].choices]  # type: ignore[valid-type]
Baseline = Literal[BY_NAME["baseline"].choices]  # type: ignore[valid-type]
BackendName = Literal[tuple(b for b in BACKENDS if b != "langchain")]  # type: ignore[valid-type]
"""The backends a client can name (a LangChain chat model is an object: the Python API only)."""
Budget = Annotated[int, Field(**field_constraints("budget"))]
Samples = Annotated[int, Field(**field_constraints("samples_per_round"))]
ModelName = Annotated[str | None, Field(description="Model name or local path.")]
BaseUrl = Annotated[str | None, Field(description="OpenAI-compatible endpoint.")]
Replies = Annotated[str | None, Field(description='Replay backend: JSONL file of {"text": ...}.')]
TimeLimit = Annotated[float | None, Field(**field_constraints("time_limit_s"))]
RunsDir = Annotated[str | None, Field(description="Where run directories go.")]

INSTRUCTIONS = (
    "Turn PyTorch nn.Modules (KernelBench format: class Model, get_inputs, get_init_inputs) into "
    "verified Triton kernels. `verify` checks a candidate ModelNew; `profile` times it (GPU); "
    "`optimize` drafts and refines kernels with an LLM; `repair` starts from a failing kernel."
)


class _Verifiers:
    """One Verifier per set of options for the server's lifetime: worker processes and
    reference outputs are reused across calls."""

    def __init__(self) -> None:
        self._by_key: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, **options: Any) -> Any:
        from agent.api import verify_options
        from agent.evaluation import make_verifier

        opts = verify_options(**options)
        key = repr(opts)
        with self._lock:
            if key not in self._by_key:
                self._by_key[key] = make_verifier(opts)
            return self._by_key[key]


def _options(args: dict[str, Any], *, extra: tuple = (), drop: tuple = ()) -> dict[str, Any]:
    """The option-table keywords among a tool's arguments (`args`: its `locals()` on entry,
    where the closure's names show too), with `extra` and without `drop`: each option declared
    once, in the tool's signature, and passed on as it is."""
    return {k: v for k, v in args.items() if (k in BY_NAME or k in extra) and k not in drop}


def _tool_error(exc: Exception) -> ToolError:
    kind = "bad input" if isinstance(exc, BadInputError) else "error"
    return ToolError(f"{kind}: {exc}")


async def _call(fn: Any, *args: Any, **kw: Any) -> Any:
    """Run blocking work off the event loop; domain errors become tool errors."""
    try:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kw))
    except (TritonAgentError, TypeError, ValueError) as exc:
        raise _tool_error(exc) from exc


def _progress_reporter(ctx: Context) -> Any:
    """A loop `on_event` callback (called from worker threads) that sends MCP progress
    notifications, in order, with a strictly increasing progress counter."""
    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    count = 0

    def on_event(event: dict[str, Any]) -> None:
        nonlocal count
        with lock:
            count += 1
            coro = ctx.report_progress(count, None, describe_event(event))
            try:
                asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=10)
            except Exception:  # progress is best effort; the run goes on
                pass

    return on_event


def describe_event(e: dict[str, Any]) -> str:
    """One line for a loop event (the same facts the CLI prints)."""
    kind = e.get("event")
    if kind == "start":
        return f"run {e.get('run_id')} on {e.get('device')} with {e.get('backend')}"
    if kind == "drafting":
        return f"round {e.get('round')}: drafting {drafting_what(e)}"
    if kind == "attempt":
        a = e.get("attempt") or {}
        return f"attempt {a.get('index')}: {a.get('status')}: {str(a.get('summary') or '')[:200]}"
    if kind == "finish":
        return f"stopped: {e.get('stop_reason')}"
    if kind == "resume":
        return f"resuming ({e.get('attempts', 0)} attempts done)"
    if kind == "baseline":
        b = e.get("baselines") or {}
        if not b.get("available"):
            return f"baselines not timed: {b.get('reason') or 'no GPU'}"
        return "baselines timed"
    message = str(e.get("message") or "").strip()
    return f"{kind}: {message}" if message else str(kind)


def build_server(runs_dir: str | None = None) -> MCPServer:
    """The MCP server with its four tools. `runs_dir`: where optimize/repair runs go (default:
    the configured one, ./runs or $TRITON_AGENT_RUNS)."""
    mcp = MCPServer(name="triton-agent", instructions=INSTRUCTIONS)
    verifiers = _Verifiers()
    _add_verify(mcp, verifiers)
    _add_profile(mcp, verifiers)
    _add_optimize(mcp, runs_dir)
    _add_repair(mcp, runs_dir)
    from agent.mcp_models import finish_server  # output schemas, hints, version, resources

    return finish_server(mcp, runs_dir)


def _add_verify(mcp: MCPServer, verifiers: _Verifiers) -> None:
    """The `verify` tool: a verdict, from the server's Verifier for the options given."""

    @mcp.tool(
        description="Check a candidate Triton kernel (ModelNew) against a PyTorch problem. "
        "Returns the verdict: status (ok, mismatch, compile_error, ...), evidence, message."
    )
    async def verify(
        problem: ProblemArg,
        kernel: KernelArg,
        trials: Trials = DEFAULTS["trials"],
        atol: Atol = DEFAULTS["atol"],
        rtol: Rtol = DEFAULTS["rtol"],
        tolerance_preset: Preset = DEFAULTS["tolerance_preset"],
        policy: Policy = DEFAULTS["policy"],
        timeout_s: Timeout = DEFAULTS["timeout_s"],
        aot_target: Target = DEFAULTS["aot_target"],
        precision: Precision = DEFAULTS["precision"],
    ) -> dict[str, Any]:
        options = _options(locals())  # first: the arguments alone
        from agent import api

        def work() -> dict[str, Any]:
            v = verifiers.get(**options)
            return api.verify(problem, kernel, verifier=v).to_dict()

        return await _call(work)


def _add_profile(mcp: MCPServer, verifiers: _Verifiers) -> None:
    """The `profile` tool: verify, then time (GPU), from the server's Verifier."""

    @mcp.tool(
        description="Verify, then time a kernel against eager PyTorch and torch.compile (GPU only; "
        "status 'unavailable' without one). Returns the profile result."
    )
    async def profile(
        problem: ProblemArg,
        kernel: KernelArg,
        baseline: Baseline = DEFAULTS["baseline"],
        trials: Trials = DEFAULTS["trials"],
        timeout_s: Timeout = DEFAULTS["timeout_s"],
        aot_target: Target = DEFAULTS["aot_target"],
        precision: Precision = DEFAULTS["precision"],
    ) -> dict[str, Any]:
        options = _options(locals(), drop=("baseline",))  # first: the arguments alone
        from agent import api

        def work() -> dict[str, Any]:
            v = verifiers.get(**options)
            return api.profile(problem, kernel, baseline=baseline, verifier=v).to_dict()

        return await _call(work)


async def _loop(
    ctx: Context, problem: str, kernel: str | None, server_runs_dir: str | None, **options: Any
) -> dict[str, Any]:
    """`optimize` (no kernel) or `repair` through the API, each loop event a progress
    notification; runs go to the tool's `runs_dir`, else the server's."""
    from agent import api

    options = {k: v for k, v in options.items() if v is not None or k == "aot_target"}
    if server_runs_dir and "runs_dir" not in options:
        options["runs_dir"] = server_runs_dir
    on_event = _progress_reporter(ctx)
    if kernel is None:
        result = await _call(api.optimize, problem, on_event=on_event, **options)
    else:
        result = await _call(api.repair, problem, kernel, on_event=on_event, **options)
    return result.to_dict()


def _add_optimize(mcp: MCPServer, server_runs_dir: str | None) -> None:
    """The `optimize` tool: the loop from the problem alone."""

    @mcp.tool(
        description="Draft, verify and refine Triton kernels for a PyTorch problem with an LLM "
        "until one is correct (and faster, on a GPU) or the budget is spent. Long-running: "
        "progress notifications report each attempt. Returns the run's result object."
    )
    async def optimize(
        ctx: Context,
        problem: ProblemArg,
        budget: Budget = DEFAULTS["budget"],
        backend: BackendName = DEFAULTS["backend"],
        model: ModelName = DEFAULTS["model"],
        base_url: BaseUrl = DEFAULTS["base_url"],
        replies: Replies = DEFAULTS["replies"],
        samples_per_round: Samples = DEFAULTS["samples_per_round"],
        compiler_seed: Annotated[
            bool, Field(description="Evaluate torch.compile's Triton as attempt 0.")
        ] = DEFAULTS["compiler_seed"],
        time_limit_s: TimeLimit = DEFAULTS["time_limit_s"],
        trials: Trials = DEFAULTS["trials"],
        timeout_s: Timeout = DEFAULTS["timeout_s"],
        aot_target: Target = DEFAULTS["aot_target"],
        precision: Precision = DEFAULTS["precision"],
        runs_dir: RunsDir = None,
    ) -> dict[str, Any]:
        options = _options(locals(), extra=("runs_dir",))
        return await _loop(ctx, problem, None, server_runs_dir, **options)


def _add_repair(mcp: MCPServer, server_runs_dir: str | None) -> None:
    """The `repair` tool: the loop from a failing kernel (attempt 0)."""

    @mcp.tool(
        description="Repair a failing Triton kernel: it is attempt 0, its verdict the first "
        "evidence the LLM reads; the loop refines until a kernel is correct or the budget is "
        "spent. Progress notifications report each attempt. Returns the run's result object."
    )
    async def repair(
        ctx: Context,
        problem: ProblemArg,
        kernel: KernelArg,
        budget: Budget = DEFAULTS["budget"],
        backend: BackendName = DEFAULTS["backend"],
        model: ModelName = DEFAULTS["model"],
        base_url: BaseUrl = DEFAULTS["base_url"],
        replies: Replies = DEFAULTS["replies"],
        samples_per_round: Samples = DEFAULTS["samples_per_round"],
        time_limit_s: TimeLimit = DEFAULTS["time_limit_s"],
        trials: Trials = DEFAULTS["trials"],
        timeout_s: Timeout = DEFAULTS["timeout_s"],
        aot_target: Target = DEFAULTS["aot_target"],
        precision: Precision = DEFAULTS["precision"],
        runs_dir: RunsDir = None,
    ) -> dict[str, Any]:
        options = _options(locals(), extra=("runs_dir",))
        return await _loop(ctx, problem, kernel, server_runs_dir, **options)


def serve(runs_dir: str | None = None) -> None:
    """Serve over stdio until the client closes the stream."""
    build_server(runs_dir).run("stdio")
