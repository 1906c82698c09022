"""Issue 37: every option is declared once, in the option table (`agent.options`). The flags of
every command, the LangGraph server's context, the API's defaults and the backends' sampling
checks all come from it; a flag or field written by hand beside it fails here."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect

import pytest

from agent.options import BACKENDS, BY_NAME, DEFAULTS, OPTIONS
from tests.helpers import ROOT
from tools.core.errors import BadInputError


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    from agent.cli.main import build_parser

    parsers: dict[str, argparse.ArgumentParser] = {}
    todo = [("", build_parser())]
    while todo:
        name, parser = todo.pop()
        parsers[name or "(top)"] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {n}".strip(), p) for n, p in action.choices.items()]
    return parsers


def _table_flags() -> dict[str, str]:
    """Every spelling of every table option -> the option's name."""
    flags = {}
    for o in OPTIONS:
        flags[o.cli_flag] = o.name
        if o.type is bool:
            flags["--no-" + o.cli_flag[2:]] = o.name
    return flags


OTHER_MEANING = {
    ("train", "--device"): "where the model trains (cuda when available), not where candidates run",
    ("train", "--seed"): "the training's seed, not the first trial's inputs'",
}
"""Flags spelled like a table option that mean something else in one command."""


def test_every_flag_of_a_table_option_comes_from_the_table():
    parsers = _command_parsers()
    assert {"optimize", "repair", "bench", "verify", "profile"} <= set(parsers)
    flags = _table_flags()
    hand_written: list[str] = []
    made = 0
    for command, parser in parsers.items():
        for action in parser._actions:
            names = {flags[s] for s in action.option_strings if s in flags}
            if action.dest in BY_NAME and action.option_strings:
                names.add(action.dest)
            if not names or (command, "/".join(action.option_strings)) in OTHER_MEANING:
                continue
            option = getattr(action, "option", None)
            if option is None or {option.name} != names or action.dest != option.name:
                hand_written.append(f"{command}: {'/'.join(action.option_strings)}")
                continue
            made += 1
            default = parser.get_default(option.name)
            if option.type is not bool:
                assert action.type is option.type and action.choices == option.choices
            assert default == option.default or (command, option.name) in {
                ("bench", "compiler_seed"),  # bench samples without the compiler unless asked
                ("repl", "budget"),  # the REPL's budget of 1
            }, (command, option.name, default)
    assert hand_written == []
    assert made >= 3 * len(OPTIONS) // 2  # the walk saw the commands' table flags


OTHER_MEANING_AT = {("agent/cli/dataset.py", "--device"), ("agent/cli/dataset.py", "--seed")}
"""`OTHER_MEANING`'s flags where they are written (train's parser)."""


def test_no_add_argument_in_agent_writes_a_table_flag_by_hand():
    """The parser walk's static twin: a parser the walk does not reach (one built outside
    `build_parser`) may not spell a table option's flag or dest either; `options._add`, whose
    flags are the table's (not literals), is the one `add_argument` of a table option."""
    flags = _table_flags()
    by_hand = []
    for path in sorted((ROOT / "agent").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
            ):
                continue
            literal = [
                a.value for a in [*node.args, *(k.value for k in node.keywords if k.arg == "dest")]
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]  # fmt: skip
            named = [s for s in literal if s in flags or s in BY_NAME]
            if named and not {(where, s) for s in named} <= OTHER_MEANING_AT:
                by_hand.append(f"{where}:{node.lineno} {'/'.join(named)}")
    assert by_hand == []


@pytest.mark.parametrize("argv, expected", [
    (["bench", "d", "--compiler-seed"], True),
    (["bench", "d"], False),
    (["bench", "d", "--no-tune"], False),
    (["optimize", "p.py", "--no-compiler-seed"], False),
    (["optimize", "p.py", "--compiler-seed"], True),
    (["optimize", "p.py", "--no-tune"], False),
])  # fmt: skip
def test_a_switch_has_one_pair_of_spellings_in_every_command(argv, expected):
    from agent.cli.main import build_parser

    args = build_parser().parse_args(argv)
    name = "tune" if "tune" in argv[-1] else "compiler_seed"
    assert getattr(args, name) is expected


def test_bench_reads_its_loop_options_through_the_table():
    from agent.cli.bench import bench_config
    from agent.cli.main import build_parser

    args = build_parser().parse_args(
        ["bench", "d", "--mode", "loop", "--samples-per-round", "3", "--no-tune",
         "--compiler-seed", "--samples", "4", "--out", "o"]
    )  # fmt: skip
    cfg = bench_config(args)
    agent = cfg.agent
    assert (agent.samples_per_round, agent.tune, agent.compiler_seed, agent.budget) == (3, 0, 1, 4)
    assert cfg.compiler_seed is True
    with pytest.raises(BadInputError, match="--samples-per-round"):
        bench_config(build_parser().parse_args(["bench", "d", "--samples-per-round", "65"]))


def test_the_served_context_is_the_table():
    from agent.langgraph_app import SERVE_ONLY, ServeContext

    fields = {f.name: f for f in dataclasses.fields(ServeContext)}
    table = {o.name for o in OPTIONS} - {"api_key"}  # a secret is not a graph setting
    assert set(fields) - set(SERVE_ONLY) == table
    for name in table:
        assert fields[name].default == DEFAULTS[name], name
    assert ServeContext().options()["budget"] == DEFAULTS["budget"]


def test_the_api_defaults_are_the_table():
    import agent.api as api

    for fn in (api.optimize, api.repair):
        assert inspect.signature(fn).parameters["budget"].default == DEFAULTS["budget"]
    tree = ast.parse((ROOT / "agent" / "api.py").read_text())
    literal = [
        d.lineno for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for d in n.kw_defaults + n.defaults
        if isinstance(d, ast.Constant) and isinstance(d.value, (int, float))
        and not isinstance(d.value, bool)
    ]  # fmt: skip
    assert literal == []


@pytest.mark.parametrize("kwargs, flag", [
    ({"temperature": 10.5}, "temperature"),
    ({"temperature": -1}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"max_tokens": 0}, "max_tokens"),
])  # fmt: skip
def test_the_backends_check_sampling_against_the_table(kwargs, flag):
    from agent.config import AgentConfig
    from agent.llm import ReplayBackend, SamplingParams

    backend = ReplayBackend(["a"])
    with pytest.raises(BadInputError, match=flag):
        backend.generate("p", **kwargs)
    with pytest.raises(BadInputError, match=flag):
        SamplingParams(**kwargs)
    with pytest.raises(BadInputError, match="--" + flag.replace("_", "-")):
        AgentConfig(**kwargs)
    assert backend.calls == []  # refused before anything was sampled
    assert backend.generate("p", temperature=BY_NAME["temperature"].high) == ["a"]


def test_the_backend_kinds_are_the_registry():
    from agent.llm import KINDS, REGISTRY, make_backend

    assert BACKENDS == ("auto", "compiler", *REGISTRY)
    assert KINDS == ("auto", *REGISTRY)
    assert make_backend("replay", replies=["x"]).generate("p") == ["x"]
    source = inspect.getsource(make_backend)
    assert "if kind ==" not in source.replace('if kind == "compiler"', "")


def _outside(o) -> object:
    """A value the row refuses: past its ceiling, under its floor, or not among its choices."""
    if o.high is not None:
        return o.high + 1
    if o.low is not None:
        return o.low if o.low_open else o.low - 1
    return "bogus"


def test_verification_options_are_checked_by_the_tables_rows():
    """tools/ builds `VerifyOptions` without the table (it never imports agent/): it checks its
    values with the very rows the table holds (`verify_options.VERIFY_OPTIONS`), so a
    verification asked for directly has the command line's ranges, from the one check."""
    from tools.checks.compare import Tolerance
    from tools.orchestrate.verify_options import VERIFY_OPTIONS, VerifyOptions
    from tools.sandboxing.sandbox import Sandbox

    assert [o.name for o in VERIFY_OPTIONS] == [o.name for o in OPTIONS if o.group == "verify"]
    assert all(BY_NAME[o.name] is o for o in VERIFY_OPTIONS)
    refused = []
    for o in VERIFY_OPTIONS:
        if o.type is bool or (o.type is str and o.choices is None) or o.name == "tolerance_preset":
            continue  # no range; the preset is Tolerance's own field
        if o.name in ("atol", "rtol"):
            kw = {"tolerance": Tolerance(**{o.name: _outside(o)})}
        else:
            kw = {o.name: _outside(o)}
        with pytest.raises(BadInputError, match=o.cli_flag):
            VerifyOptions(**kw)
        refused.append(o.name)
    assert {"trials", "jobs_per_gpu", "seed", "timeout_s", "memory_mb", "atol"} <= set(refused)
    # one name for the verification jobs at once per GPU, from the flag to the sandbox
    assert "jobs_per_gpu" in inspect.signature(Sandbox).parameters


def test_no_range_is_checked_by_hand_beside_the_table():
    """A table option compared with a number and refused as bad input (exit 2) outside the
    table's `Option.check` is a second range check: agent/ and tools/ have none. A guard of a
    library's own invariant (the sandbox's positive count of slots) raises its own error."""
    by_hand = []
    for path in sorted([*(ROOT / "agent").rglob("*.py"), *(ROOT / "tools").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.If) or not any(map(_option_vs_number, ast.walk(node.test))):
                continue
            raised = {
                getattr(r.exc.func, "id", None)
                for b in node.body for r in ast.walk(b)
                if isinstance(r, ast.Raise) and isinstance(r.exc, ast.Call)
            }  # fmt: skip
            if "BadInputError" in raised:
                by_hand.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert by_hand == []


def _option_vs_number(node: ast.AST) -> bool:
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    names = {getattr(s, "attr", None) or getattr(s, "id", None) for s in sides}
    numbers = [
        s for s in sides if isinstance(s, ast.Constant) and type(s.value) in (int, float)
    ]  # fmt: skip
    return bool(names & set(BY_NAME)) and bool(numbers)


def _schema_range(prop: dict) -> dict:
    """The range keys of a JSON schema property, a nullable one (`anyOf`) included."""
    keys = ("minimum", "exclusiveMinimum", "maximum")
    found = {k: prop[k] for k in keys if k in prop}
    for alt in prop.get("anyOf", []):
        found.update({k: alt[k] for k in keys if k in alt})
    return found


def test_the_mcp_tools_take_the_tables_ranges_and_defaults():
    import anyio

    from agent.mcp_server import build_server

    async def schemas():
        return {t.name: t.input_schema["properties"] for t in await build_server().list_tools()}

    checked = 0
    for tool, props in anyio.run(schemas).items():
        for name, prop in props.items():
            o = BY_NAME.get(name)
            if o is None:
                continue
            wanted = {}
            if o.low is not None:
                wanted["exclusiveMinimum" if o.low_open else "minimum"] = o.low
            if o.high is not None:
                wanted["maximum"] = o.high
            assert _schema_range(prop) == wanted, (tool, name)
            assert prop.get("default") == o.default, (tool, name)
            checked += 1
    assert checked >= 20
    tree = ast.parse((ROOT / "agent" / "mcp_server.py").read_text())
    by_hand = [
        n.lineno for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Field"
        for k in n.keywords if k.arg in ("ge", "gt", "le", "lt")
    ]  # fmt: skip
    assert by_hand == []


def test_the_backends_leave_generates_checks_to_the_base_class():
    """The five backends once each opened `generate` with the same prompt and sampling checks;
    they write `_sample` only, and `Backend.generate` checks once."""
    from agent.llm.base import Backend

    for path in sorted((ROOT / "agent" / "llm").glob("*_backend.py")) + [
        ROOT / "agent" / "llm" / "replay.py"
    ]:
        tree = ast.parse(path.read_text())
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and "Backend" in n.name]
        assert classes, path.name
        for cls in classes:
            methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
            assert "_sample" in methods and "generate" not in methods, (path.name, cls.name)
        calls = {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert not calls & {"check_prompt", "check_sampling"}, path.name
    from agent.llm import ReplayBackend
    from agent.llm.langchain_backend import LangChainBackend

    assert issubclass(ReplayBackend, Backend) and issubclass(LangChainBackend, Backend)
    with pytest.raises(BadInputError, match="prompt is empty"):
        ReplayBackend(["a"]).generate("")
