"""The `dataset`, `dataset build`, `dataset stats` and `train` parsers, pinned (issue 37:
`register` split into one function per parser, its flags unchanged): every argument's flags,
destination, default, type, choices, nargs, metavar, whether required, and help (the option
table's own flags left out: tests/test_options_table.py holds those to the table), compared with
tests/fixtures/cli_parsers_pinned.json, recorded before the split. An intended change of a flag
regenerates it: CLI_PARSERS_WRITE=1 runs this file once to write it (then review the diff)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from agent.cli.main import build_parser
from agent.options import BY_NAME
from tests.helpers import ROOT

PINNED = ROOT / "tests/fixtures/cli_parsers_pinned.json"
COMMANDS = (("dataset",), ("dataset", "build"), ("dataset", "stats"), ("train",))


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    raise KeyError(name)


def _describe(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    return [
        {
            "flags": list(a.option_strings),
            "dest": a.dest,
            "default": repr(a.default),
            "type": getattr(a.type, "__name__", repr(a.type)),
            "choices": list(a.choices) if a.choices else None,
            "nargs": repr(a.nargs),
            "metavar": repr(a.metavar),
            "required": a.required,
            "help": a.help,
            "action": type(a).__name__,
        }
        for a in parser._actions
        if a.dest not in BY_NAME
    ]


def _parsers() -> dict[str, Any]:
    out = {}
    for path in COMMANDS:
        p = build_parser()
        for name in path:
            p = _subparser(p, name)
        out[" ".join(path)] = {"actions": _describe(p), "defaults": sorted(p._defaults)}
    return out


def test_the_dataset_and_train_parsers_are_as_pinned():
    got = _parsers()
    if os.environ.get("CLI_PARSERS_WRITE") == "1":
        PINNED.write_text(json.dumps(got, indent=1) + "\n")
    assert got == json.loads(PINNED.read_text())
