"""Supervised fine-tuning on verified pairs: the KernelLLM recipe, runnable on one GPU (or a CPU
for a tiny model).

Each pair becomes one example rendered exactly as the loop prompts KernelLLM: the prompt is
`agent.prompts.render_kernelllm(python_code)` (or the same `--prompt-template` the loop was given),
the completion the verified kernel in a ```python fence followed by the end-of-sequence token.
Prompt and completion are tokenized separately, as `HFBackend` tokenizes a prompt, and the loss
covers the completion tokens only.

Defaults follow KernelLLM's published recipe: 10 epochs, batch size 32 (reached by gradient
accumulation over `micro_batch_size`), and the checkpoint chosen by validation perplexity on a
held-out part of the pairs (the lowest validation loss, evaluated at the end of every epoch and
every `eval_every` steps). The learning rate is not published: the defaults are 1e-5 for full
fine-tuning, 2e-4 for LoRA.

The output directory is a `save_pretrained` model + tokenizer (LoRA adapters merged), which
`agent.llm.hf_backend.HFBackend(model=OUT_DIR)` and `vllm serve OUT_DIR` load, plus
`training.json` (hyperparameters, per-step and per-evaluation losses, the chosen checkpoint).
Each save fills a sibling temporary directory and then takes the output directory's place, so
a run killed mid-save keeps the previous best checkpoint whole.

Plain PyTorch + transformers; `peft` only for `lora=True`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.llm.hf_backend import resolve_dtype
from agent.rundir import write_atomic
from tools.errors import BadInputError

log = logging.getLogger(__name__)

IGNORE = -100


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
class Example:
    key: str
    input_ids: list[int]
    labels: list[int]

    @property
    def completion_tokens(self) -> int:
        return sum(1 for t in self.labels if t != IGNORE)


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


def render_pair(python_code: str, triton_code: str, template: str | None = None) -> tuple[str, str]:
    """(prompt, completion) for one pair: the loop's KernelLLM prompt and the fenced kernel."""
    from agent.prompts import render_kernelllm

    prompt = render_kernelllm(python_code, template)
    completion = "```python\n" + triton_code.strip("\n") + "\n```\n"
    return prompt, completion


def load_examples(
    path: str, tokenizer: Any, *, max_length: int, template: str | None = None
) -> tuple[list[Example], int]:
    """Tokenized examples of the verified pairs in `path`, and how many were too long."""
    from agent.dataset import read_pairs

    records = [r for r in read_pairs(path) if r.verdict == "ok"]
    if not records:
        raise BadInputError(f"{path}: no verified pairs to train on")
    eos = tokenizer.eos_token_id
    if eos is None:
        raise BadInputError("the base model's tokenizer has no end-of-sequence token")
    examples, dropped = [], 0
    for r in records:
        prompt, completion = render_pair(r.python_code, r.triton_code, template)
        p = tokenizer(prompt, add_special_tokens=True)["input_ids"]
        c = tokenizer(completion, add_special_tokens=False)["input_ids"] + [eos]
        if len(p) + len(c) > max_length:
            dropped += 1
            continue
        examples.append(Example(key=r.key, input_ids=p + c, labels=[IGNORE] * len(p) + c))
    if not examples:
        raise BadInputError(f"every pair is longer than --max-length {max_length} tokens")
    return examples, dropped


def split(
    examples: list[Example], fraction: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """(train, val): a seeded shuffle; at least one of each when there are two or more examples."""
    order = list(examples)
    random.Random(seed).shuffle(order)
    if fraction <= 0 or len(order) < 2:
        return order, []
    n_val = min(len(order) - 1, max(1, round(len(order) * fraction)))
    return order[n_val:], order[:n_val]


def _collate(batch: list[Example], pad_id: int, torch: Any, device: str) -> dict[str, Any]:
    width = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, e in enumerate(batch):  # right padding
        n = len(e.input_ids)
        ids[i, :n] = torch.tensor(e.input_ids)
        labels[i, :n] = torch.tensor(e.labels)
        mask[i, :n] = 1
    return {
        "input_ids": ids.to(device),
        "attention_mask": mask.to(device),
        "labels": labels.to(device),
    }


def _loss_sum(model: Any, batch: dict[str, Any], torch: Any) -> Any:
    """Summed cross-entropy over completion tokens (next-token shifted)."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    shift_logits = logits[:, :-1, :].float()
    shift_labels = batch["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(
        shift_logits.reshape(-1, shift_logits.size(-1)),
        shift_labels.reshape(-1),
        ignore_index=IGNORE,
        reduction="sum",
    )


def evaluate(
    model: Any, examples: list[Example], *, micro_batch_size: int, pad_id: int, device: str
) -> float:
    """Mean loss per completion token."""
    import torch

    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(examples), micro_batch_size):
            chunk = examples[i : i + micro_batch_size]
            total += float(_loss_sum(model, _collate(chunk, pad_id, torch, device), torch))
            tokens += sum(e.completion_tokens for e in chunk)
    model.train()
    return total / max(tokens, 1)


def train(
    config: TrainConfig, on_event: Callable[[dict[str, Any]], None] | None = None
) -> TrainResult:
    """Fine-tune `config.base` on the pairs and save the chosen checkpoint to `config.out`."""
    emit = on_event or (lambda e: None)
    start = time.monotonic()
    try:
        import torch
        import transformers
    except ImportError as e:
        raise BadInputError(
            "training needs torch and transformers: pip install 'triton-agent[train]'"
        ) from e
    if config.lora:
        try:
            import peft
        except ImportError as e:
            raise BadInputError(
                "--lora needs peft: pip install peft (or train without --lora)"
            ) from e
    if not Path(config.data).is_file():
        raise BadInputError(f"pairs file not found: {config.data}")
    out = Path(config.out)
    if out.is_dir() and any(out.iterdir()) and not (out / "config.json").exists():
        # each save replaces the whole directory: never one holding files of the user's
        raise BadInputError(
            f"--out {out} holds files that are not a saved model; give a new directory"
        )

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = resolve_dtype(config.dtype, device)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            config.base, local_files_only=config.local_files_only
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            config.base, dtype=dtype, local_files_only=config.local_files_only
        )
    except (OSError, ValueError) as e:
        raise BadInputError(f"cannot load the base model {config.base!r}: {e}") from e
    pad_id = (
        tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    )

    examples, dropped = load_examples(
        config.data, tokenizer, max_length=config.max_length, template=config.prompt_template
    )
    train_set, val_set = split(examples, config.val_fraction, config.seed)
    emit(
        {"event": "data", "train": len(train_set), "val": len(val_set), "dropped_too_long": dropped}
    )

    model.to(device)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    if config.lora:
        lora_config = peft.LoraConfig(
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(model, lora_config)
        if config.gradient_checkpointing:
            model.enable_input_require_grads()
    model.train()

    steps_per_epoch = math.ceil(len(train_set) / config.batch_size)
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    warmup = int(total_steps * config.warmup_ratio)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)

    def schedule(step: int) -> float:  # linear warm-up, then cosine decay to 10% of the peak
        if step < warmup:
            return (step + 1) / (warmup + 1)
        progress = (step - warmup) / max(1, total_steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    out.mkdir(parents=True, exist_ok=True)
    result = TrainResult(
        out=str(out),
        train_examples=len(train_set),
        val_examples=len(val_set),
        dropped_too_long=dropped,
        steps=0,
        best=None,
    )
    best_adapter: dict[str, Any] | None = None
    rng = random.Random(config.seed)

    def checkpoint(epoch: float) -> None:
        """Evaluate; keep the checkpoint when its validation loss is the lowest so far."""
        nonlocal best_adapter
        if not val_set:
            return
        loss = evaluate(
            model, val_set, micro_batch_size=config.micro_batch_size, pad_id=pad_id, device=device
        )
        entry = {
            "step": result.steps,
            "epoch": round(epoch, 3),
            "val_loss": loss,
            "val_perplexity": math.exp(min(loss, 50.0)),
        }
        result.evals.append(entry)
        improved = result.best is None or loss < result.best["val_loss"]
        emit({"event": "eval", **entry, "best": improved})
        if not improved:
            return
        result.best = entry
        if config.lora:  # adapters are small: keep them in memory, merge once at the end
            best_adapter = {
                k: v.detach().to("cpu", copy=True)
                for k, v in peft.get_peft_model_state_dict(model).items()
            }
        else:
            _save(model, tokenizer, out)

    done = False
    for epoch in range(config.epochs):
        order = list(train_set)
        rng.shuffle(order)
        for b in range(0, len(order), config.batch_size):
            batch = order[b : b + config.batch_size]
            tokens = sum(e.completion_tokens for e in batch)
            total = 0.0
            for m in range(0, len(batch), config.micro_batch_size):
                micro = _collate(batch[m : m + config.micro_batch_size], pad_id, torch, device)
                loss_sum = _loss_sum(model, micro, torch)
                (loss_sum / tokens).backward()
                total += float(loss_sum.detach())
            if config.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            result.steps += 1
            step = {
                "step": result.steps,
                "epoch": round(epoch + (b + len(batch)) / len(order), 3),
                "loss": total / max(tokens, 1),
                "lr": scheduler.get_last_lr()[0],
            }
            result.step_losses.append(step)
            emit({"event": "step", **step, "total_steps": total_steps})
            done = result.steps >= total_steps
            last_of_epoch = b + config.batch_size >= len(order)
            if (
                last_of_epoch
                or done
                or (config.eval_every and result.steps % config.eval_every == 0)
            ):
                checkpoint(step["epoch"])
            if done:
                break
        if done:
            break

    if config.lora:
        if best_adapter is not None:
            peft.set_peft_model_state_dict(model, best_adapter)
        model = model.merge_and_unload()
        _save(model, tokenizer, out)
    elif result.best is None:  # no validation split: the last weights
        _save(model, tokenizer, out)
    result.duration_s = round(time.monotonic() - start, 3)
    record = {"config": asdict(config), **result.to_dict(), "schema_version": 1}
    write_atomic(out / "training.json", json.dumps(record, indent=2) + "\n")
    emit({"event": "finish", "out": str(out), "best": result.best, "steps": result.steps})
    return result


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
