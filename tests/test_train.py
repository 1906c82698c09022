"""`python -m agent train` (TRL's SFTTrainer): a few steps on a tiny local Llama lower the loss;
the chosen checkpoint is saved and loads in the HF backend, which generates from it. The pairs
as a `datasets` dataset with KernelBook's columns and the loop's prompt/completion."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs trl and datasets: pip install -e '.[train]'")

from agent.cli import main
from agent.dataset import PairRecord, pair_key
from agent.llm.hf_backend import HFBackend
from agent.prompts import render_kernelllm
from agent.train import (
    KERNELBOOK_COLUMNS,
    TrainConfig,
    drop_too_long,
    pairs_dataset,
    render_pair,
    save_pairs_dataset,
    split,
)
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


def test_dataset_has_kernelbooks_columns_and_the_loops_prompt(pairs, tiny_llama_dir, tmp_path):
    import datasets
    from transformers import AutoTokenizer

    py = (EX / "problems" / "relu.py").read_text()
    prompt, completion = render_pair(py, "KERNEL")
    assert prompt == render_kernelllm(py)
    assert completion == "```python\nKERNEL\n```\n"
    ds = pairs_dataset(str(pairs))
    assert len(ds) == len(NAMES)
    assert set(KERNELBOOK_COLUMNS) | {"prompt", "completion"} <= set(ds.column_names)
    row = next(r for r in ds if r["module_name"] == "relu")
    assert row["prompt"] == render_kernelllm(py) and row["synthetic"] is False
    assert row["original_triton_code"] == row["triton_code"]
    assert row["completion"] == "```python\n" + row["triton_code"].strip("\n") + "\n```\n"
    # save_to_disk / load_from_disk round trip
    assert save_pairs_dataset(str(pairs), str(tmp_path / "ds")) == len(NAMES)
    back = datasets.load_from_disk(str(tmp_path / "ds"))
    assert back.column_names == ds.column_names and back[0] == ds[0]
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    kept, dropped = drop_too_long(ds, tok, 4096)
    assert (len(kept), dropped) == (len(NAMES), 0)
    assert drop_too_long(ds, tok, 50)[1] == len(NAMES)  # dropped, never truncated
    train, val = split(list(ds), 0.25, seed=0)
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
            "4",
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
    assert (res["train_examples"], res["val_examples"], res["steps"]) == (3, 1, 4)
    losses = [s["loss"] for s in res["step_losses"]]
    assert losses[-1] < losses[0] * 0.9, losses  # the same 3 examples every step
    assert len(res["evals"]) == 4  # once per epoch
    best = min(res["evals"], key=lambda e: e["val_loss"])
    assert res["best"] == best  # the checkpoint kept is the lowest validation loss
    saved = json.loads((out / "training.json").read_text())
    assert saved["config"]["epochs"] == 4 and saved["best"]["step"] == best["step"]

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


def test_dataset_build_saves_a_datasets_dataset(tmp_path, capsys):
    import datasets

    (tmp_path / "problems").mkdir()
    (tmp_path / "kernels").mkdir()
    (tmp_path / "problems" / "relu.py").write_text((EX / "problems" / "relu.py").read_text())
    (tmp_path / "kernels" / "relu.py").write_text((EX / "kernels" / "relu.py").read_text())
    rc = main(
        ["dataset", "build", str(tmp_path / "kernels"), "--out", str(tmp_path / "pairs.jsonl"),
         "--save-to-disk", str(tmp_path / "ds"), "--trials", "2", "--target", "none",
         "--timeout", "240"]
    )  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    ds = datasets.load_from_disk(str(tmp_path / "ds"))
    assert len(ds) == 1 and ds[0]["module_name"] == "relu"
    assert {"original_triton_code", "synthetic", "prompt", "completion"} <= set(ds.column_names)
