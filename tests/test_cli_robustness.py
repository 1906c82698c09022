"""Runs that cannot start leave nothing behind; corrupt files and invalid numbers are bad input
(exit 2, a message), never a traceback; the API's verification keywords follow the config; the
trainer's checkpoint survives a save that dies half-way."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest

import agent
from agent.cli import main
from tests.helpers import EX, FAST, FAST_CLI
from tools.core.errors import BadInputError, SandboxError

RELU = str(EX / "problems" / "relu.py")
RELU_KERNEL = str(EX / "kernels" / "relu.py")
BROKEN = str(EX / "broken" / "relu__mismatch.py")


def run_dirs(runs: Path) -> list[str]:
    """The run directories under `runs` (`inputs/` holds source text, not runs)."""
    return sorted(p.name for p in runs.iterdir() if p.name != "inputs") if runs.exists() else []


# -- a run that cannot start ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message, code",
    [
        (["optimize", RELU, "--backend", "replay"], "needs replies", 2),
        (["optimize", RELU, "--replies", "<missing>"], "cannot read replay file", 2),
        (["optimize", RELU, "--backend", "hf", "--model", "<missing>"], "could not load", 1),
        (["repair", RELU, BROKEN, "--backend", "compiler"], "repair needs an LLM backend", 2),
        (["repair", RELU], "repair needs the failing kernel file", 2),
    ],
    ids=[
        "replay-without-replies",
        "missing-replies",
        "missing-hf-model",
        "repair-no-llm",
        "repair-no-kernel",
    ],
)
def test_a_run_that_cannot_start_leaves_no_run_directory(args, message, code, tmp_path, capsys):
    runs = tmp_path / "runs"
    args = [str(tmp_path / "missing") if a == "<missing>" else a for a in args]
    rc = main([*args, "--runs-dir", str(runs), *FAST_CLI])
    err = capsys.readouterr().err
    assert rc == code and message in err and "Traceback" not in err
    assert run_dirs(runs) == []


class FailingBackend:
    """Fails on its first call, with an error the loop does not turn into an attempt."""

    name = "failing"
    kind = "completion"

    def __init__(self, error: Exception):
        self.error = error

    def generate(self, *args, **kwargs):
        raise self.error


@pytest.mark.parametrize("error", [BadInputError("bad"), SandboxError("pool broke")])
def test_an_error_before_any_attempt_discards_the_new_run_and_closes_once(
    error, tmp_path, monkeypatch
):
    closes: list[int] = []

    class Counting(sqlite3.Connection):
        def close(self) -> None:
            closes.append(1)
            super().close()

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, factory=Counting, **k))
    runs = tmp_path / "runs"
    with pytest.raises(type(error)):
        agent.optimize(
            RELU,
            budget=1,
            backend=FailingBackend(error),
            compiler_seed=False,
            runs_dir=str(runs),
            **FAST,
        )
    assert run_dirs(runs) == []
    assert closes == [1]


# -- corrupt run files, invalid numbers -------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "unreadable"),
        ("[]", "not a run config"),
        ('{"budget": "x"}', "not a run config"),
    ],
)
def test_resuming_a_run_with_a_corrupt_config_is_bad_input(text, message, tmp_path, capsys):
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "config.json").write_text(text)
    rc = main(["optimize", "--resume", "r1", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert rc == 2 and "config.json" in err and message in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["verify", RELU, RELU_KERNEL, "--timeout", "0"], "--timeout must be a finite number > 0"),
        (
            ["verify", RELU, RELU_KERNEL, "--timeout", "nan"],
            "--timeout must be a finite number > 0",
        ),
        (["optimize", RELU, "--timeout", "-1"], "--timeout must be a finite number > 0"),
        (["optimize", RELU, "--time-limit", "0"], "--time-limit must be a finite number > 0"),
        (["optimize", RELU, "--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["optimize", RELU, "--top-p", "0"], "--top-p must be a finite number > 0 and <= 1"),
        (["optimize", RELU, "--max-tokens", "0"], "--max-tokens must be a whole number >= 1"),
    ],
)
def test_invalid_numbers_are_bad_input(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2 and message in err
    assert not (tmp_path / "runs").exists()


# -- dtypes -----------------------------------------------------------------------------------


def test_train_with_an_unknown_dtype_is_bad_input_naming_the_choices(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("{}\n")
    rc = main(
        [
            "train",
            str(pairs),
            "--base",
            str(tmp_path / "base"),
            "--out",
            str(tmp_path / "out"),
            "--dtype",
            "bogus",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "unknown dtype 'bogus'" in err and "bfloat16" in err


def test_one_dtype_resolver_for_the_trainer_and_the_hf_backend():
    import torch

    from agent.llm.hf_backend import HFBackend, resolve_dtype

    assert resolve_dtype(None, "cpu") is torch.float32
    assert resolve_dtype(None, "cuda:0") is torch.bfloat16
    assert resolve_dtype("half", "cpu") is torch.float16
    for name in ("bogus", "Tensor", "int64"):  # not an attribute, not a dtype, not floating
        with pytest.raises(BadInputError, match="choose one of"):
            resolve_dtype(name, "cpu")
    with pytest.raises(BadInputError, match="unknown dtype"):
        HFBackend(model="/nonexistent", dtype="bogus")


# -- the API's verification keywords ---------------------------------------------------------


def test_verify_accepts_every_verification_field_of_the_config():
    from agent.api import VERIFY_FIELDS, verify_options
    from agent.config import AgentConfig
    from tools.orchestrate.verify import VerifyOptions

    shared = {f.name for f in AgentConfig.__dataclass_fields__.values()} & set(
        VerifyOptions.__dataclass_fields__
    )
    assert shared <= set(VERIFY_FIELDS)
    assert {"generalize", "jobs_per_gpu", "atol", "rtol", "tolerance_preset"} <= set(VERIFY_FIELDS)
    defaults = AgentConfig()
    assert verify_options(**{f: getattr(defaults, f) for f in VERIFY_FIELDS}) == (
        defaults.verify_options()
    )
    with pytest.raises(TypeError, match="unknown verification option.*bogus"):
        verify_options(bogus=1)
    verdict = agent.verify(RELU, RELU_KERNEL, generalize=True, jobs_per_gpu=1, **FAST)
    assert verdict.correct


# -- the trainer's checkpoint ----------------------------------------------------------------


class FakeModel:
    def __init__(self, weights: str, fail: bool = False):
        self.config = SimpleNamespace(use_cache=False)
        self.weights, self.fail = weights, fail

    def save_pretrained(self, path) -> None:
        (Path(path) / "model.safetensors").write_text(self.weights[: len(self.weights) // 2])
        if self.fail:  # killed half-way through the weights
            raise KeyboardInterrupt
        (Path(path) / "model.safetensors").write_text(self.weights)
        (Path(path) / "config.json").write_text("{}")


class FakeTokenizer:
    def save_pretrained(self, path) -> None:
        (Path(path) / "tokenizer.json").write_text("{}")


def test_a_save_killed_half_way_keeps_the_previous_checkpoint(tmp_path):
    from agent.train import _save

    out = tmp_path / "out"
    out.mkdir()
    _save(FakeModel("best weights, epoch 1"), FakeTokenizer(), out)
    assert (out / "model.safetensors").read_text() == "best weights, epoch 1"
    with pytest.raises(KeyboardInterrupt):
        _save(FakeModel("better weights, epoch 2", fail=True), FakeTokenizer(), out)
    assert (out / "model.safetensors").read_text() == "best weights, epoch 1"
    _save(FakeModel("better weights, epoch 2"), FakeTokenizer(), out)
    assert (out / "model.safetensors").read_text() == "better weights, epoch 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary directory left
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]


def test_train_refuses_an_output_directory_holding_other_files(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("{}\n")
    out = tmp_path / "notes"
    out.mkdir()
    (out / "todo.txt").write_text("mine")
    rc = main(["train", str(pairs), "--base", str(tmp_path / "base"), "--out", str(out)])
    assert rc == 2 and "not a saved model" in capsys.readouterr().err
    assert (out / "todo.txt").read_text() == "mine"
