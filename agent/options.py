"""The options a run takes, declared once: name, type, default, range or choices, help.

This table generates the command-line flags (`add_options`), reads them back as `AgentConfig`
keywords (`config_kwargs`), gives the MCP tools and the API their defaults (`DEFAULTS`), and
checks every value once (`check`, called by `AgentConfig`): a value out of range is a
`BadInputError` naming the flag (exit 2), before any work.

The verification rows are `tools.orchestrate.verify_options.VERIFY_OPTIONS` (tools/ owns their
defaults and ranges: `VerifyOptions` checks itself with them, and tools/ never imports agent/);
the sampling rows are `agent.llm.base.SAMPLING_OPTIONS` (KernelLLM's published settings),
declared beside the backends that check them with the same `Option.check`
(`tools.orchestrate.option_spec`); the backend kinds come from the backend registry
(`agent.llm.REGISTRY`).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from typing import Any

from agent.llm import REGISTRY
from agent.llm.base import SAMPLING_OPTIONS
from tools.orchestrate.evaluate import BASELINES, DEFAULT_BASELINE
from tools.orchestrate.option_spec import Option
from tools.orchestrate.verify_options import VERIFY_OPTIONS

BACKENDS = ("auto", "compiler", *REGISTRY)
"""What `backend` accepts: the registered backends (`agent.llm.REGISTRY`; `langchain` needs a
chat model object: the API), `compiler` (the compiler drafter alone) and `auto`."""


OPTIONS: tuple[Option, ...] = (
    # -- the loop ---------------------------------------------------------------------------
    Option(name="budget", group="loop", type=int, default=20, low=1, high=1000,
           help="candidate kernels to evaluate (the compiler seed, attempt 0, is free)"),
    Option(name="samples_per_round", group="loop", type=int, default=1, low=1, high=64,
           help="candidates drafted and evaluated in parallel per round"),
    Option(name="compiler_seed", group="loop", type=bool, default=True,
           help="evaluate torch.compile's Triton as attempt 0 (free: not counted in the budget)"),
    Option(name="tune", group="loop", type=bool, default=True,
           help="search launch parameters of a correct kernel without the LLM (GPU)"),
    Option(name="tune_trials", group="loop", type=int, default=16, low=1, flag="--tune-trials",
           help="most launch-parameter variants the tuner evaluates"),
    Option(name="target_speedup", group="loop", type=float, default=1.0, low=0, low_open=True,
           help="stop once a correct kernel is this much faster than the bar"),
    Option(name="baseline", group="bar", type=str, default=DEFAULT_BASELINE, choices=BASELINES,
           help="the bar a kernel must beat: best = the faster of eager and torch.compile"),
    Option(name="time_limit_s", group="loop", type=float, default=None, nullable=True, low=0,
           low_open=True, flag="--time-limit", help="seconds for the whole run"),
    # -- the backend and sampling -----------------------------------------------------------
    Option(name="backend", group="backend", type=str, default="auto", choices=BACKENDS,
           help="auto: replay if --replies, openai if --base-url (or $TRITON_AGENT_BASE_URL / "
           "$OPENAI_BASE_URL), hf if --model is a local dir, else the compiler drafter"),
    Option(name="model", group="backend", type=str, default=None, nullable=True,
           help="model name or local path (default facebook/KernelLLM for LLM backends; "
           "$TRITON_AGENT_MODEL)"),
    Option(name="base_url", group="backend", type=str, default=None, nullable=True,
           help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"),
    Option(name="api_key", group="backend", type=str, default=None, nullable=True,
           help="API key (default: $OPENAI_API_KEY or EMPTY)"),
    Option(name="replies", group="backend", type=str, default=None, nullable=True,
           help='replay backend: JSONL file, one {"text": ...} per line'),
    Option(name="prompt_format", group="backend", type=str, default="auto",
           choices=("auto", "completion", "chat"),
           help="completion: KernelLLM's raw prompt; chat: chat messages"),
    Option(name="prompt_template", group="backend", type=str, default=None, nullable=True,
           help="custom first-round template file ($problem placeholder)"),
    *SAMPLING_OPTIONS,  # temperature, top_p, max_tokens: agent.llm.base, whose backends check them
    *VERIFY_OPTIONS,  # trials ... jobs_per_gpu: tools.orchestrate.verify_options
)  # fmt: skip

BY_NAME = {o.name: o for o in OPTIONS}
DEFAULTS: dict[str, Any] = {o.name: o.default for o in OPTIONS}
"""Every option's default: the MCP tools' and the API's keyword defaults."""
NO_TARGET = ("none", "off", "")


def group(*names: str) -> tuple[Option, ...]:
    return tuple(o for o in OPTIONS if o.group in names)


def add_options(
    parser: argparse.ArgumentParser,
    *groups: str,
    names: Iterable[str] = (),
    defaults: dict[str, Any] | None = None,
) -> None:
    """Add the flags of `groups`, and of the options `names`, to `parser`: every flag of a table
    option is made here (`tests/test_options_table.py` walks every command's parser). `defaults`
    overrides a default for this command (the REPL's budget of 1, bench's compiler seed off).
    A switch gets both spellings, `--tune` and `--no-tune`, whatever its default."""
    wanted = set(names)
    for o in OPTIONS:
        if o.group in groups or o.name in wanted:
            _add(parser, o, (defaults or {}).get(o.name, o.default))


def _add(parser: argparse.ArgumentParser, o: Option, default: Any) -> None:
    if o.type is bool:
        # --tune and --no-tune (argparse adds the second, and the default to the help)
        action = parser.add_argument(
            o.cli_flag,
            dest=o.name,
            action=argparse.BooleanOptionalAction,
            default=default,
            help=f"{o.help} (default {'on' if default else 'off'})",
        )
        action.option = o  # type: ignore[attr-defined]  # the table's (tests check every flag)
        return
    shown = "none" if default is None and o.name == "aot_target" else default
    help_text = o.help + (f" (default {shown})" if default is not None else "")
    action = parser.add_argument(
        o.cli_flag,
        dest=o.name,
        type=o.type,
        default=default,
        choices=o.choices,
        metavar=None if o.choices else o.cli_flag.lstrip("-").split("-")[0].upper(),
        help=help_text,
    )
    action.option = o  # type: ignore[attr-defined]


def config_kwargs(args: argparse.Namespace, *groups: str) -> dict[str, Any]:
    """The flags of `groups` as `AgentConfig` keywords. A flag left unset where the config has
    an environment fallback (`--model`, `--base-url`) is left out, so the fallback applies."""
    kw: dict[str, Any] = {}
    for o in group(*groups):
        if not hasattr(args, o.name):
            continue
        value = getattr(args, o.name)
        if o.name in ("model", "base_url") and not value:
            continue
        if o.name == "aot_target" and isinstance(value, str) and value.lower() in NO_TARGET:
            value = None
        kw[o.name] = value
    return kw


def check(values: Any, names: Iterable[str] | None = None) -> None:
    """Check the options of `values` (an object with the options as attributes) against the
    table: the one range and choice check (AgentConfig calls it)."""
    for name in names if names is not None else BY_NAME:
        if hasattr(values, name):
            BY_NAME[name].check(getattr(values, name))


def options_dataclass(name: str, *, exclude: Iterable[str] = ()) -> type:
    """A keyword-only dataclass with one field per table option (its type, `| None` where
    nullable, its default, its help as the field's `description`): the LangGraph server's
    context (`agent.langgraph_app.ServeContext`) is one, so its settings are the table's."""
    skip = set(exclude)
    fields = [
        (
            o.name,
            (o.type | None) if o.nullable else o.type,
            dataclasses.field(default=o.default, metadata={"description": o.help}),
        )
        for o in OPTIONS
        if o.name not in skip
    ]
    return dataclasses.make_dataclass(name, fields, kw_only=True)


def field_constraints(name: str) -> dict[str, Any]:
    """An option's range and help as pydantic `Field` keywords (the MCP tools' schemas)."""
    o = BY_NAME[name]
    kw: dict[str, Any] = {"description": o.help[:1].upper() + o.help[1:] + "."}
    if o.low is not None:
        kw["gt" if o.low_open else "ge"] = o.low
    if o.high is not None:
        kw["le"] = o.high
    return kw
