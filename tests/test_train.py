"""`python -m agent train`: a few SFT steps on a tiny local Llama lower the loss; the chosen
checkpoint is saved and loads in the HF backend, which generates from it."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

from agent.cli import main
from agent.dataset import PairRecord, pair_key
from agent.llm.hf_backend import HFBackend
from agent.prompts import render_kernelllm
from agent.train import IGNORE, TrainConfig, load_examples, render_pair, split
from tests.fakes import tiny_llama
from tests.helpers import EX, last_json

tiny_llama_dir = tiny_llama.tiny_llama_dir

NAMES = (
    "relu",
    "softmax",
    "multi_io",
    "scale_add_bias",
)  # prompt + kernel fit the tiny model's 4096 positions


@pytest.fixture
def pairs(tmp_path) -> Path:
    path = tmp_path / "pairs.jsonl"
    lines = []
    for name in NAMES:
        py, tr = (
            (EX / "problems" / f"{name}.py").read_text(),
            (EX / "kernels" / f"{name}.py").read_text(),
        )
        r = PairRecord(
            entry_point="Model",
            python_code=py,
            triton_code=tr,
            repo_name="examples",
            module_name=name,
            license="MIT",
            key=pair_key(py, tr),
            source="given",
            verdict="ok",
            trials=2,
            atol=1e-4,
            rtol=1e-4,
        )
        lines.append(json.dumps(r.to_dict()))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_examples_use_the_loops_prompt_and_mask_the_prompt(pairs, tiny_llama_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    py = (EX / "problems" / "relu.py").read_text()
    prompt, completion = render_pair(py, "KERNEL")
    assert prompt == render_kernelllm(py)
    assert completion == "```python\nKERNEL\n```\n"
    examples, dropped = load_examples(str(pairs), tok, max_length=4096)
    assert dropped == 0 and len(examples) == len(NAMES)
    e = examples[0]
    n_prompt = len(tok(render_kernelllm((EX / "problems" / "relu.py").read_text()))["input_ids"])
    assert e.labels[:n_prompt] == [IGNORE] * n_prompt
    assert e.labels[n_prompt:] == e.input_ids[n_prompt:] and e.input_ids[-1] == tok.eos_token_id
    train, val = split(examples, 0.25, seed=0)
    assert len(train) == 3 and len(val) == 1


def test_a_few_steps_lower_the_loss_and_the_saved_model_generates(
    pairs, tiny_llama_dir, tmp_path, capsys
):
    out = tmp_path / "tuned"
    rc = main(
        [
            "train",
            str(pairs),
            "--base",
            str(tiny_llama_dir),
            "--out",
            str(out),
            "--epochs",
            "8",
            "--batch-size",
            "3",
            "--micro-batch-size",
            "3",
            "--lr",
            "2e-2",
            "--val-fraction",
            "0.25",
            "--max-length",
            "4096",
            "--json",
        ]
    )
    assert rc == 0
    res = last_json(capsys)
    assert (res["train_examples"], res["val_examples"], res["steps"]) == (3, 1, 8)
    losses = [s["loss"] for s in res["step_losses"]]
    assert losses[-1] < losses[0] * 0.9, losses  # the same 3 examples every step
    assert len(res["evals"]) == 8  # once per epoch
    best = min(res["evals"], key=lambda e: e["val_loss"])
    assert res["best"] == best  # the checkpoint kept is the lowest validation loss
    saved = json.loads((out / "training.json").read_text())
    assert saved["config"]["epochs"] == 8 and saved["best"]["step"] == best["step"]

    backend = HFBackend(model=str(out), local_files_only=True)
    replies = backend.generate(
        render_kernelllm((EX / "problems" / "relu.py").read_text()),
        n=2,
        temperature=1.0,
        max_tokens=8,
    )
    assert len(replies) == 2 and all(isinstance(r, str) for r in replies)


def test_max_steps_and_no_validation_split_saves_the_last_weights(pairs, tiny_llama_dir, tmp_path):
    from agent.train import train

    res = train(
        TrainConfig(
            data=str(pairs),
            base=str(tiny_llama_dir),
            out=str(tmp_path / "o"),
            batch_size=2,
            micro_batch_size=1,
            max_steps=1,
            val_fraction=0.0,
            max_length=4096,
        )
    )
    assert res.steps == 1 and res.best is None and res.evals == []
    assert (tmp_path / "o" / "config.json").exists() and (
        tmp_path / "o" / "tokenizer.json"
    ).exists()


def test_lora_without_peft_is_a_clear_error(pairs, tiny_llama_dir, tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_peft(name, *args, **kwargs):
        if name == "peft":
            raise ImportError("No module named 'peft'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_peft)
    rc = main(
        ["train", str(pairs), "--base", str(tiny_llama_dir), "--out", str(tmp_path / "o"), "--lora"]
    )
    assert rc == 2
    assert "pip install peft" in capsys.readouterr().err


def test_lora_is_merged_into_a_plain_model(pairs, tiny_llama_dir, tmp_path):
    pytest.importorskip(
        "peft",
        reason="local-only, not run in CI: needs `pip install peft` "
        "(or 'triton-agent[train]'; peft is not in the test extra)",
    )
    from agent.train import train

    out = tmp_path / "lora"
    res = train(
        TrainConfig(
            data=str(pairs),
            base=str(tiny_llama_dir),
            out=str(out),
            epochs=2,
            batch_size=3,
            micro_batch_size=3,
            lora=True,
            lora_r=4,
            val_fraction=0.25,
            max_length=4096,
        )
    )
    assert res.best is not None
    assert not (out / "adapter_config.json").exists()  # merged, not an adapter directory
    assert len(HFBackend(model=str(out)).generate("import torch", n=1, max_tokens=4)) == 1
