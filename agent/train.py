"""Supervised fine-tuning on verified pairs with TRL's `SFTTrainer`: the KernelLLM recipe on one
GPU, several (accelerate / FSDP / DeepSpeed through `accelerate launch`), or a CPU for a tiny model.

Each verified pair becomes one prompt/completion example rendered exactly as the loop prompts
KernelLLM: the prompt is `agent.prompts.render_kernelllm(python_code)` (or the same
`--prompt-template` the loop was given), the completion the verified kernel in a ```python fence
(TRL appends the end-of-sequence token). The loss covers the completion tokens only
(`completion_only_loss`). `pairs_dataset` builds that `datasets` dataset (with KernelBook's
columns beside `prompt` and `completion`), which `dataset build --save-to-disk` also writes.

Defaults follow KernelLLM's published recipe: 10 epochs, batch size 32 (reached by gradient
accumulation over `micro_batch_size` per device), and the checkpoint chosen by validation loss on a
held-out part of the pairs (evaluated at the end of every epoch, or every `eval_every` steps;
`load_best_model_at_end`). The learning rate is not published: 1e-5 for full fine-tuning, 2e-4
for LoRA (`peft`, all linear layers; merged into the saved model). Examples longer than
`max_length` tokens are dropped, never truncated.

The output directory is a `save_pretrained` model + tokenizer, which
`agent.llm.hf_backend.HFBackend(model=OUT_DIR)` and `vllm serve OUT_DIR` load, plus
`training.json` (hyperparameters, per-step and per-evaluation losses, the chosen checkpoint).
The final save fills a sibling temporary directory and then takes the output directory's place.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.llm.hf_backend import resolve_dtype
from agent.rundir import write_atomic
from tools.core.errors import BadInputError

log = logging.getLogger(__name__)

KERNELBOOK_COLUMNS = (
    "entry_point", "repo_name", "module_name", "synthetic", "license", "python_code",
    "triton_code", "original_triton_code",
)  # fmt: skip
"""KernelBook's columns (GPUMODE/KernelBook), which `pairs_dataset` writes beside ours."""


@dataclass(kw_only=True)
class TrainConfig:
    """What to train on, from what, into where, and how."""

    data: str
    """A pairs JSONL file (`python -m agent dataset build`)."""
    base: str
    """The base model: a local `save_pretrained` directory (or a hub name already cached)."""
    out: str
    epochs: int = 10
    batch_size: int = 32
    """Examples per optimizer step (KernelLLM: 32)."""
    micro_batch_size: int = 1
    """Examples per forward pass; the rest is gradient accumulation."""
    lr: float | None = None
    """Peak learning rate; default 1e-5 (full) or 2e-4 (LoRA)."""
    weight_decay: float = 0.0
    warmup_ratio: float = 0.03
    max_grad_norm: float = 1.0
    max_steps: int | None = None
    """Stop after this many optimizer steps (a smoke test, a time box)."""
    val_fraction: float = 0.1
    eval_every: int | None = None
    """Also evaluate every N optimizer steps (default: at the end of each epoch only)."""
    max_length: int = 8192
    """Longer examples (prompt + completion tokens) are dropped, never truncated."""
    seed: int = 0
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    device: str | None = None
    """Default cuda when available, else cpu."""
    dtype: str | None = None
    """Default bfloat16 on CUDA, float32 on the CPU."""
    gradient_checkpointing: bool = False
    prompt_template: str | None = None
    """The loop's `--prompt-template` file, if it used one."""
    local_files_only: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "micro_batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise BadInputError(f"--{name.replace('_', '-')} must be at least 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise BadInputError("--max-steps must be at least 1")
        if not 0 <= self.val_fraction < 1:
            raise BadInputError("--val-fraction must be in [0, 1)")
        if self.lr is None:
            self.lr = 2e-4 if self.lora else 1e-5


@dataclass(kw_only=True)
class TrainResult:
    out: str
    train_examples: int
    val_examples: int
    dropped_too_long: int
    steps: int
    best: dict[str, Any] | None
    """The chosen evaluation: step, epoch, val_loss, val_perplexity (None without a val split)."""
    step_losses: list[dict[str, float]] = field(default_factory=list)
    evals: list[dict[str, float]] = field(default_factory=list)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_base(base: str, local_files_only: bool = True) -> None:
    """Refuse a `--base` that cannot load, saying which of the two it was taken for: a local
    directory that is not there (or holds no `config.json`), or a hub id that is not in the
    Hugging Face cache (training never downloads). Hugging Face's own message for a missing
    path is about the form of repo ids, which is not what went wrong."""
    path = Path(base).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise BadInputError(
                f"--base {base}: not a saved model directory (no config.json; "
                "save one with save_pretrained, see the README's tiny base model)"
            )
        return
    parts = base.split("/")
    looks_like_repo_id = (
        len(parts) <= 2
        and all(parts)
        and not base.startswith((".", "~"))
        and all(re.fullmatch(r"[\w.-]+", p) for p in parts)
    )
    if not looks_like_repo_id:
        raise BadInputError(f"--base {base}: no such directory")
    if local_files_only:
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(base, "config.json"), str):
            raise BadInputError(
                f"--base {base}: no such directory, and no hub model of that id in the Hugging "
                f"Face cache (training does not download: `huggingface-cli download {base}` "
                "first, or give a save_pretrained directory)"
            )


def render_pair(python_code: str, triton_code: str, template: str | None = None) -> tuple[str, str]:
    """(prompt, completion) for one pair: the loop's KernelLLM prompt and the fenced kernel."""
    from agent.prompts import render_kernelllm

    prompt = render_kernelllm(python_code, template)
    completion = "```python\n" + triton_code.strip("\n") + "\n```\n"
    return prompt, completion


def kernelbook_row(record: Any, template: str | None = None) -> dict[str, Any]:
    """One verified pair as a dataset row: KernelBook's columns, the loop's prompt/completion,
    and ours (`key`, `source`, `speedup`); `synthetic` and `original_triton_code` as the
    record has them (`agent.dataset.PairRecord`)."""
    prompt, completion = render_pair(record.python_code, record.triton_code, template)
    return {
        "entry_point": record.entry_point,
        "repo_name": record.repo_name,
        "module_name": record.module_name,
        "synthetic": bool(record.synthetic),
        "license": record.license,
        "python_code": record.python_code,
        "triton_code": record.triton_code,
        "original_triton_code": record.original_triton_code or record.triton_code,
        "prompt": prompt,
        "completion": completion,
        "key": record.key,
        "source": record.source,
        "speedup": record.speedup,
    }


def pairs_dataset(path: str, template: str | None = None) -> Any:
    """The verified pairs of a pairs JSONL file as a `datasets.Dataset`."""
    try:
        import datasets
    except ImportError as e:
        raise BadInputError(
            "a datasets dataset needs `datasets`: pip install 'triton-agent[train]'"
        ) from e
    from agent.dataset import read_pairs

    rows = [kernelbook_row(r, template) for r in read_pairs(path) if r.verdict == "ok"]
    if not rows:
        raise BadInputError(f"{path}: no verified pairs to train on")
    return datasets.Dataset.from_list(rows)


def save_pairs_dataset(path: str, out: str, template: str | None = None) -> int:
    """`pairs_dataset(path)` written with `save_to_disk(out)` (load with `load_from_disk`)."""
    ds = pairs_dataset(path, template)
    ds.save_to_disk(out)
    return len(ds)


def drop_too_long(ds: Any, tokenizer: Any, max_length: int) -> tuple[Any, int]:
    """Examples whose prompt + completion (+ end token) fit `max_length` tokens, and how many
    did not (dropped, never truncated: a cut kernel teaches the model to stop mid-file)."""

    def fits(row: dict[str, Any]) -> bool:
        n = len(tokenizer(row["prompt"] + row["completion"])["input_ids"]) + 1
        return n <= max_length

    kept = ds.filter(fits)
    return kept, len(ds) - len(kept)


def split(examples: list[Any], fraction: float, seed: int) -> tuple[list[Any], list[Any]]:
    """(train, val): a seeded shuffle; at least one of each when there are two or more examples."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    if fraction <= 0 or len(order) < 2:
        return order, []
    n_val = min(len(order) - 1, max(1, round(len(order) * fraction)))
    return order[n_val:], order[:n_val]


class _Events:
    """A TrainerCallback (made in `train`) that turns the trainer's logs into our events."""

    def __init__(self, emit: Callable[[dict[str, Any]], None], result: TrainResult) -> None:
        self.emit, self.result = emit, result

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        logs = logs or {}
        if "loss" in logs:
            step = {
                "step": state.global_step,
                "epoch": round(float(state.epoch or 0.0), 3),
                "loss": float(logs["loss"]),
                "lr": float(logs.get("learning_rate", 0.0)),
            }
            self.result.step_losses.append(step)
            self.emit({"event": "step", **step, "total_steps": state.max_steps})
        if "eval_loss" in logs:
            loss = float(logs["eval_loss"])
            entry = {
                "step": state.global_step,
                "epoch": round(float(state.epoch or 0.0), 3),
                "val_loss": loss,
                "val_perplexity": math.exp(min(loss, 50.0)),
            }
            improved = self.result.best is None or loss < self.result.best["val_loss"]
            self.result.evals.append(entry)
            if improved:
                self.result.best = entry
            self.emit({"event": "eval", **entry, "best": improved})


def train(
    config: TrainConfig, on_event: Callable[[dict[str, Any]], None] | None = None
) -> TrainResult:
    """Fine-tune `config.base` on the pairs with TRL's SFTTrainer and save the chosen
    checkpoint to `config.out`."""
    emit = on_event or (lambda e: None)
    start = time.monotonic()
    datasets, torch, transformers, trl = _import_training()
    peft_config = _lora_config(config)
    out = _check_paths(config)
    random.seed(config.seed)
    device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = resolve_dtype(config.dtype, device)
    tokenizer, model = _load_base(config, transformers, dtype)
    train_set, val_set, dropped = _examples(config, tokenizer, datasets)
    n_val = len(val_set) if val_set is not None else 0
    emit({"event": "data", "train": len(train_set), "val": n_val, "dropped_too_long": dropped})

    schedule = _Schedule.of(config, len(train_set))
    checkpoints = Path(
        tempfile.mkdtemp(
            dir=out.parent if out.parent.exists() else None, prefix=f".{out.name}.ckpt."
        )
    )
    bf16 = dtype == torch.bfloat16 and device.startswith("cuda")
    args = _sft_config(
        config, trl, checkpoints, schedule, validate=val_set is not None, bf16=bf16, device=device
    )
    result = TrainResult(
        out=str(out),
        train_examples=len(train_set),
        val_examples=n_val,
        dropped_too_long=dropped,
        steps=0,
        best=None,
    )
    callback = type("EventsCallback", (_Events, transformers.TrainerCallback), {})(emit, result)
    trainer = trl.SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_set,
        eval_dataset=val_set,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[callback],
    )
    try:
        _fit_and_save(trainer, config, tokenizer, out, result)
    finally:
        shutil.rmtree(checkpoints, ignore_errors=True)
    result.duration_s = round(time.monotonic() - start, 3)
    _write_record(out, config, result, trl.__version__, schedule)
    emit({"event": "finish", "out": str(out), "best": result.best, "steps": result.steps})
    return result


def _import_training() -> tuple[Any, Any, Any, Any]:
    """datasets, torch, transformers and trl, or a clear error naming the extra to install."""
    try:
        import datasets
        import torch
        import transformers
        import trl
    except ImportError as e:
        raise BadInputError(
            f"training needs torch, transformers, datasets and trl: pip install 'triton-agent[train]' ({e})"
        ) from e
    return datasets, torch, transformers, trl


def _lora_config(config: TrainConfig) -> Any:
    """peft's LoraConfig (all linear layers) with `--lora`, else None."""
    if not config.lora:
        return None
    try:
        import peft
    except ImportError as e:
        raise BadInputError("--lora needs peft: pip install peft (or train without --lora)") from e
    return peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def _check_paths(config: TrainConfig) -> Path:
    """The output directory, once the pairs file exists and the output holds no files of the
    user's (the final save replaces the whole directory)."""
    if not Path(config.data).is_file():
        raise BadInputError(f"pairs file not found: {config.data}")
    out = Path(config.out)
    if out.is_dir() and any(out.iterdir()) and not (out / "config.json").exists():
        # the final save replaces the whole directory: never one holding files of the user's
        raise BadInputError(
            f"--out {out} holds files that are not a saved model; give a new directory"
        )
    return out


def _load_base(config: TrainConfig, transformers: Any, dtype: Any) -> tuple[Any, Any]:
    """The base model's tokenizer (padding with its end-of-sequence token if it has no pad
    token) and model."""
    check_base(config.base, config.local_files_only)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            config.base, local_files_only=config.local_files_only
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            config.base, dtype=dtype, local_files_only=config.local_files_only
        )
    except (OSError, ValueError) as e:
        raise BadInputError(f"cannot load the base model {config.base!r}: {e}") from e
    if tokenizer.eos_token_id is None:
        raise BadInputError("the base model's tokenizer has no end-of-sequence token")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model


def _examples(config: TrainConfig, tokenizer: Any, datasets: Any) -> tuple[Any, Any, int]:
    """The prompt/completion examples, those too long dropped (how many: the third value),
    split into a training set and a validation set (None when nothing is held out)."""
    ds, dropped = drop_too_long(
        pairs_dataset(config.data, config.prompt_template), tokenizer, config.max_length
    )
    if len(ds) == 0:
        raise BadInputError(f"every pair is longer than --max-length {config.max_length} tokens")
    train_rows, val_rows = split(list(ds), config.val_fraction, config.seed)
    columns = ["prompt", "completion"]
    train_set = datasets.Dataset.from_list([{k: r[k] for k in columns} for r in train_rows])
    val_set = (
        datasets.Dataset.from_list([{k: r[k] for k in columns} for r in val_rows])
        if val_rows
        else None
    )
    return train_set, val_set, dropped


@dataclass(frozen=True)
class _Schedule:
    """Examples per forward pass, forward passes per optimizer step, optimizer steps."""

    micro: int
    accumulation: int
    steps_per_epoch: int
    total_steps: int

    @classmethod
    def of(cls, config: TrainConfig, examples: int) -> _Schedule:
        micro = min(config.micro_batch_size, config.batch_size)
        accumulation = max(1, math.ceil(config.batch_size / micro))
        steps_per_epoch = math.ceil(examples / (micro * accumulation))
        total_steps = min(config.max_steps or 10**9, config.epochs * steps_per_epoch)
        return cls(micro, accumulation, steps_per_epoch, total_steps)


def _sft_config(
    config: TrainConfig,
    trl: Any,
    checkpoints: Path,
    schedule: _Schedule,
    *,
    validate: bool,
    bf16: bool,
    device: str,
) -> Any:
    """TRL's SFTConfig: the schedule, a cosine learning rate, the loss on completions only,
    evaluation and the best checkpoint kept (by validation loss) where there is a validation set."""
    eval_strategy = "no" if not validate else ("steps" if config.eval_every else "epoch")
    return trl.SFTConfig(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps or -1,
        per_device_train_batch_size=schedule.micro,
        per_device_eval_batch_size=schedule.micro,
        gradient_accumulation_steps=schedule.accumulation,
        learning_rate=config.lr,
        weight_decay=config.weight_decay,
        warmup_steps=int(schedule.total_steps * config.warmup_ratio),
        lr_scheduler_type="cosine",
        max_grad_norm=config.max_grad_norm,
        seed=config.seed,
        logging_steps=1,
        eval_strategy=eval_strategy,
        eval_steps=config.eval_every,
        save_strategy=eval_strategy if validate else "no",
        save_steps=config.eval_every,
        save_total_limit=1,
        load_best_model_at_end=validate,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        completion_only_loss=True,
        max_length=None,  # long examples were dropped above, never truncated
        gradient_checkpointing=config.gradient_checkpointing,
        bf16=bf16,
        use_cpu=device == "cpu",
        report_to=[],
        disable_tqdm=True,
        dataloader_pin_memory=device != "cpu",
    )


def _fit_and_save(
    trainer: Any, config: TrainConfig, tokenizer: Any, out: Path, result: TrainResult
) -> None:
    """Train, then save the chosen model (LoRA adapters merged into it) to `out`."""
    trainer.train()
    result.steps = trainer.state.global_step
    model = trainer.model
    if config.lora:
        model = model.merge_and_unload()
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(model, tokenizer, out)


def _write_record(
    out: Path, config: TrainConfig, result: TrainResult, trl_version: str, schedule: _Schedule
) -> None:
    """OUT/training.json: the config, the result (losses, chosen checkpoint) and the trainer."""
    record = {
        "config": asdict(config),
        **result.to_dict(),
        "trainer": {"library": f"trl {trl_version}", "steps_per_epoch": schedule.steps_per_epoch,
                    "gradient_accumulation_steps": schedule.accumulation},
        "schema_version": 2,
    }  # fmt: skip
    write_atomic(out / "training.json", json.dumps(record, indent=2) + "\n")


def _save(model: Any, tokenizer: Any, out: Path) -> None:
    """save_pretrained of model and tokenizer into a sibling temporary directory, swapped in for
    `out` once complete: a run killed mid-save keeps the previous checkpoint whole. The saved
    config has the KV cache on for inference (gradient checkpointing turns it off in training)."""
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    use_cache = getattr(model.config, "use_cache", None)
    model.config.use_cache = True
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        model.config.use_cache = use_cache
    _replace_dir(tmp, out)


def _replace_dir(new: Path, out: Path) -> None:
    """Move directory `new` to `out`; the previous `out` is deleted only once `new` is there
    (killed between the two renames, it is left whole as `.<out>.*.tmp.previous`)."""
    previous = new.with_name(new.name + ".previous")
    if out.exists():
        os.replace(out, previous)
    os.replace(new, out)
    shutil.rmtree(previous, ignore_errors=True)
