"""`--input-scales` (issue 35): the verifier's scale trials from the command line, declared once
in the option table (`agent.options`) for every command that verifies (verify, optimize, bench
and the rest of the `verify` group), and mapped to `VerifyOptions.input_scales`: factors
separated by commas, `none` for no scale trial, `default` (or the flag left out) for the
contract's own (x100 under the fp32 contract, none under kernelbench-v0)."""

from __future__ import annotations

import pytest

from agent.cli import main
from tests.helpers import EX, ROOT, last_json
from tools.orchestrate.verify_options import SCALE_TRIALS

RELU = str(EX / "problems" / "relu.py")
RELU6 = str(ROOT / "tests" / "adversarial" / "relu__clamps_at_six_default_protocol.py")
CPU = ["--device", "cpu", "--target", "none", "--trials", "1", "--timeout", "120"]


def _scales(argv: list[str]) -> tuple[float, ...]:
    """The scale trials a command's parsed flags give its verifier."""
    from agent.cli.bench import bench_config
    from agent.cli.common import verify_options_from
    from agent.cli.main import build_parser
    from agent.cli.optimize import config_from

    args = build_parser().parse_args(argv)
    if argv[0] == "verify":
        return verify_options_from(args).scale_trials()
    if argv[0] == "optimize":
        return config_from(args).verify_options().scale_trials()
    return bench_config(args).verify_options().scale_trials()


COMMANDS = {"verify": ["verify", "p.py", "k.py"], "optimize": ["optimize", "p.py"],
            "bench": ["bench", "problems"]}  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    "flag, expected",
    [
        ([], SCALE_TRIALS),
        (["--input-scales", "default"], SCALE_TRIALS),
        (["--input-scales", "1000"], (1000.0,)),
        (["--input-scales", "100, 1e4"], (100.0, 1e4)),
        (["--input-scales", "x7"], (7.0,)),
        (["--input-scales", "none"], ()),
    ],
)
def test_each_command_maps_the_flag_to_the_verifiers_scale_trials(command, flag, expected):
    assert _scales(COMMANDS[command] + flag) == expected


def test_kernelbench_protocol_has_none_unless_asked():
    assert _scales(["bench", "problems", "--protocol", "kernelbench"]) == ()
    asked = ["bench", "problems", "--protocol", "kernelbench", "--input-scales", "100"]
    assert _scales(asked) == (100.0,)


def test_bench_records_the_scale_trials_in_its_settings():
    from agent.cli.bench import bench_config
    from agent.cli.main import build_parser

    args = build_parser().parse_args(["bench", "problems", "--input-scales", "100,1e4"])
    assert bench_config(args).settings()["input_scales"] == [100.0, 1e4]


@pytest.mark.parametrize(
    "value, fragment",
    [("abc", "'abc' is not a number"), ("0", "finite and positive"), ("-3", "finite and positive"),
     ("100,inf", "finite and positive")],
)  # fmt: skip
def test_a_bad_value_is_bad_input(value, fragment, capsys):
    code = main(["verify", RELU, RELU6, "--input-scales", value, "--json", *CPU])
    out = last_json(capsys)
    assert code == 2 and out["status"] == "bad_input", out
    assert fragment in out["message"], out["message"]


def test_the_flag_reaches_the_verification(capsys):
    """A ReLU that clamps at 6 (right on randn inputs): `ok` with `--input-scales none`, a
    mismatch at x3 with `--input-scales 3` (randn's largest of the problem's 13,000 values, x3, passes 6)."""
    assert main(["verify", RELU, RELU6, "--input-scales", "none", "--json", *CPU]) == 0
    assert last_json(capsys)["status"] == "ok"
    assert main(["verify", RELU, RELU6, "--input-scales", "3", "--json", *CPU]) == 1
    out = last_json(capsys)
    assert out["status"] == "mismatch" and out["message"].startswith("wrong at inputs x3"), out
