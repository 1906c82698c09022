"""Typed MCP surface: output schemas, tool hints, the package version and past runs as resources.

`agent.mcp_server` declares the tools; `finish_server` (called at the end of `build_server`) types
them. The verdict and profile schemas are the tool results' own dataclasses seen through pydantic
(`tools.core.results.Verdict`, `tools.orchestrate.profile_result.ProfileResult`: one declaration, field docstrings become
schema descriptions); the run result, which is a plain object built by `agent.report`, has its
model here. A client therefore sees every field, its type and what it means, and its SDK checks
`structuredContent` against the schema.

Resources (read-only): `triton-agent://runs` lists the runs under the runs directory,
`triton-agent://runs/{run_id}` is a run's report.json, `triton-agent://runs/{run_id}/best_kernel.py`
its best kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

import pydantic.dataclasses as pdc
from pydantic import BaseModel, ConfigDict, Field

from agent.version import package_version
from tools.core.errors import BadInputError
from tools.core.results import Verdict
from tools.orchestrate.profile_result import ProfileResult

_DOCS = ConfigDict(use_attribute_docstrings=True)

VerdictOut = pdc.dataclass(Verdict, config=_DOCS)
"""The `verify` result: `tools.core.results.Verdict`."""
ProfileOut = pdc.dataclass(ProfileResult, config=_DOCS)
"""The `profile` result: `tools.orchestrate.profile_result.ProfileResult` (the trace text is never sent)."""


class AttemptOut(BaseModel):
    """One evaluated candidate of a run."""

    model_config = ConfigDict(extra="allow")
    index: int = Field(description="0 for the compiler seed or a given kernel, then 1, 2, ...")
    round: int | None = Field(None, description="The drafting round it came from.")
    source: str = Field(description="`compiler`, `given`, `llm:<model>` or `tune`.")
    status: str = Field(description="The verdict's status (ok, mismatch, compile_error, ...).")
    correct: bool | None = None
    speedup: float | None = Field(None, description="Over the run's chosen baseline (GPU only).")
    speedups: dict[str, float] | None = Field(None, description="Over each timed baseline.")
    summary: str | None = Field(None, description="One line: the verdict and its key evidence.")


class BestOut(BaseModel):
    """The best correct kernel of a run."""

    model_config = ConfigDict(extra="allow")
    index: int
    source: str
    status: str
    speedup: float | None = None
    speedups: dict[str, float] | None = None
    summary: str | None = None


class BudgetOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    given: int = Field(description="Candidate kernels the run was allowed.")
    left: int | None = Field(None, description="Candidate kernels not spent.")


class RunResultOut(BaseModel):
    """The `optimize` / `repair` result: the run's report.json (docs/json.md)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int
    command: str = Field(description="`optimize` or `repair`.")
    status: Literal["ok", "failed"] = Field(
        description="ok: a correct kernel (and faster than the target, when timed)."
    )
    correct: bool = Field(description="A correct kernel was found.")
    faster: bool | None = Field(None, description="It beats the target speedup; null if untimed.")
    timed: bool = Field(description="Speed was measured (a GPU run).")
    run_id: str
    run_dir: str = Field(description="Where the run's files are (attempts/, best_kernel.py).")
    problem: str | None = None
    device: str
    best_kernel: str | None = Field(None, description="Path of best_kernel.py, when there is one.")
    best: BestOut | None = None
    baselines: dict[str, Any] | None = Field(None, description="Eager / torch.compile timings.")
    target_speedup: float | None = None
    baseline: str | None = Field(None, description="The baseline speedups are measured against.")
    budget: BudgetOut
    attempts: list[AttemptOut]
    stop_reason: str | None = None
    notes: list[str] = Field(default_factory=list)


class RunSummaryOut(BaseModel):
    """One past run, as the `triton-agent://runs` resource lists it."""

    run_id: str
    uri: str
    problem: str | None = None
    status: str | None = Field(None, description="ok / failed; null for a run still going.")
    best_speedup: float | None = None
    attempts: int = 0


OUTPUT_MODELS: dict[str, Any] = {
    "verify": VerdictOut,
    "profile": ProfileOut,
    "optimize": RunResultOut,
    "repair": RunResultOut,
}

READ_ONLY = {"verify", "profile"}
"""Tools that write nothing and can be repeated at will (a fresh verification each call)."""


def tool_annotations(name: str) -> Any:
    from mcp.types import ToolAnnotations

    if name in READ_ONLY:
        return ToolAnnotations(
            title=f"{name} a Triton kernel",
            readOnlyHint=True,
            idempotentHint=True,
            destructiveHint=False,
            openWorldHint=False,
        )
    return ToolAnnotations(
        title=f"{name} with an LLM in the loop",
        readOnlyHint=False,  # writes a run directory
        destructiveHint=False,  # never overwrites: every run gets its own directory
        idempotentHint=False,  # each call is a new run (and new samples)
        openWorldHint=True,  # talks to an LLM endpoint
    )


def finish_server(mcp: Any, runs_dir: str | None = None) -> Any:
    """Type `mcp`'s tools, set its version and add the past-run resources. Returns `mcp`."""
    mcp._lowlevel_server.version = package_version()
    for tool in mcp._tool_manager.list_tools():
        model = OUTPUT_MODELS.get(tool.name)
        if model is None:
            continue
        meta = tool.fn_metadata
        meta.output_model = model
        meta.output_schema = None
        meta.model_post_init(None)  # derives the schema from the model, as the SDK does
        tool.__dict__.pop("output_schema", None)  # Tool caches it
        tool.annotations = tool_annotations(tool.name)
    add_run_resources(mcp, runs_dir)
    return mcp


def _runs_root(runs_dir: str | None) -> Path:
    return Path(runs_dir or os.environ.get("TRITON_AGENT_RUNS", "runs"))


def list_runs(runs_dir: str | None = None) -> list[RunSummaryOut]:
    """Run directories (those with config.json), newest first."""
    root = _runs_root(runs_dir)
    if not root.is_dir():
        return []
    out = []
    runs = [d for d in root.iterdir() if d.is_dir() and (d / "config.json").exists()]
    for d in sorted(runs, key=lambda d: d.stat().st_mtime, reverse=True):
        report = _read_json(d / "report.json") or {}
        best = report.get("best") or {}
        out.append(
            RunSummaryOut(
                run_id=d.name,
                uri=f"triton-agent://runs/{d.name}",
                problem=report.get("problem")
                or (_read_json(d / "config.json") or {}).get("problem_path"),
                status=report.get("status"),
                best_speedup=best.get("speedup"),
                attempts=len(report.get("attempts") or []),
            )
        )
    return out


def _run_dir(runs_dir: str | None, run_id: str) -> Path:
    from agent.config import check_run_id

    check_run_id(run_id, "run id")
    d = _runs_root(runs_dir) / run_id
    if not (d / "config.json").exists():
        raise BadInputError(f"no run {run_id!r}")
    return d


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def add_run_resources(mcp: Any, runs_dir: str | None) -> None:
    @mcp.resource(
        "triton-agent://runs",
        name="runs",
        title="Past runs",
        description="Runs under the runs directory, newest first: id, problem, status, speedup.",
        mime_type="application/json",
    )
    def runs() -> str:
        return json.dumps([r.model_dump() for r in list_runs(runs_dir)], indent=1)

    @mcp.resource(
        "triton-agent://runs/{run_id}",
        name="run",
        title="A run's report",
        description="A run's report.json (its result object; docs/json.md).",
        mime_type="application/json",
    )
    def run(run_id: str) -> str:
        d = _run_dir(runs_dir, run_id)
        path = d / "report.json"
        if not path.exists():
            return json.dumps({"run_id": run_id, "status": None, "note": "still running"})
        return path.read_text()

    @mcp.resource(
        "triton-agent://runs/{run_id}/best_kernel.py",
        name="best_kernel",
        title="A run's best kernel",
        description="The drop-in ModelNew the run found (absent when none was correct).",
        mime_type="text/x-python",
    )
    def best_kernel(run_id: str) -> str:
        path = _run_dir(runs_dir, run_id) / "best_kernel.py"
        if not path.exists():
            raise BadInputError(f"run {run_id!r} has no correct kernel")
        return path.read_text()
