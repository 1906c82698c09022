"""What the bench's executors share: the LLM backend a bench builds, Ray's start-up and
resources, an evaluation handed back as plain data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.bench.config import BenchConfig
from agent.bench.records import Draft, Evaluated, SampleRecord
from tools.core.errors import BadInputError


def _make_backend(cfg: BenchConfig) -> Any:
    from agent.llm import backend_for

    return backend_for(cfg.agent)


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
    from tools.orchestrate.verify import resolve_device

    return {"num_gpus": 1} if resolve_device(cfg.agent.device) == "cuda" else {"num_cpus": 1}


def _evaluated(d: dict[str, Any]) -> Evaluated:
    """An evaluation handed back as plain data (by a Ray task or the loop's run)."""
    return Evaluated(
        record=SampleRecord.from_dict(d["record"]),
        verdict=d["verdict"],
        profile=d["profile"],
        draft=Draft(**d["draft"]),
    )
