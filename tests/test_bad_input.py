"""Every malformed problem or kernel file the CLI can meet: a clear message and the documented
exit code (2 = bad input, 1 = the candidate ran and is not correct), never a traceback.

The same table is in docs/verification.md ("Bad input"); keep them in step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent.cli import main
from tests.helpers import EX

RELU_PROBLEM = EX / "problems" / "relu.py"
RELU_KERNEL = EX / "kernels" / "relu.py"

GOOD_PROBLEM = RELU_PROBLEM.read_text()
HEADER = "import torch\nimport torch.nn as nn\n"
MODEL = """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
GET_INPUTS = "\ndef get_inputs():\n    return [torch.randn(4, 8)]\n"
GET_INIT = "\ndef get_init_inputs():\n    return []\n"

# name -> (problem file contents (None: missing, "<dir>": a directory, bytes: binary),
#          message fragment, exit code)
PROBLEMS: dict[str, tuple[object, str, int]] = {
    "missing_file": (None, "problem file not found", 2),
    "directory": ("<dir>", "is a directory", 2),
    "empty_file": ("", "missing `Model`, `get_inputs`, `get_init_inputs`", 2),
    "syntax_error": (HEADER + "class Model(nn.Module:\n    pass\n", "syntax error at line 3", 2),
    "binary_non_utf8": (b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x00", "cannot read problem file", 2),
    "no_model": (HEADER + GET_INPUTS + GET_INIT, "missing `Model`", 2),
    "no_get_inputs": (HEADER + MODEL + GET_INIT, "missing `get_inputs`", 2),
    "no_get_init_inputs": (HEADER + MODEL + GET_INPUTS, "missing `get_init_inputs`", 2),
    "get_inputs_non_tensor": (
        HEADER + MODEL + GET_INIT + "\ndef get_inputs():\n    return ['not a tensor']\n",
        "item 0 is a str, not a tensor",
        2,
    ),
    "get_inputs_empty_list": (
        HEADER + MODEL + GET_INIT + "\ndef get_inputs():\n    return []\n",
        "must return a non-empty list",
        2,
    ),
    "get_inputs_raises": (
        HEADER + MODEL + GET_INIT + "\ndef get_inputs():\n    raise ValueError('no data here')\n",
        "get_inputs() raised",
        2,
    ),
    "model_init_raises": (
        HEADER
        + "class Model(nn.Module):\n    def __init__(self):\n        raise RuntimeError('boom')\n"
        + GET_INPUTS
        + GET_INIT,
        "Model(*get_init_inputs()) raised",
        2,
    ),
    "model_forward_raises": (
        HEADER
        + "class Model(nn.Module):\n    def forward(self, x):\n        raise RuntimeError('boom')\n"
        + GET_INPUTS
        + GET_INIT,
        "Model.forward raised",
        2,
    ),
    # dropout (torch's RNG) is judged statistically (tests/test_stochastic_verify.py); other
    # randomness cannot be judged at all
    "nondeterministic_beyond_torch_rng": (
        "import os\n" + HEADER + "class Model(nn.Module):\n    def forward(self, x):\n"
        "        return x + int.from_bytes(os.urandom(4), 'little')\n" + GET_INPUTS + GET_INIT,
        "non-deterministic beyond torch's random number generator",
        2,
    ),
    "too_large_for_cpu_kernelbench_19_relu": (
        HEADER
        + "batch_size = 4096\ndim = 393216\n"
        + MODEL
        + "\ndef get_inputs():\n    return [torch.randn(batch_size, dim)]\n"
        + GET_INIT,
        "--allow-large",
        2,
    ),
}

KERNEL_OK = RELU_KERNEL.read_text()
# name -> (kernel file contents, status (None: refused before verifying), message, exit code)
KERNELS: dict[str, tuple[object, str | None, str, int]] = {
    "missing_file": (None, None, "kernel file not found", 2),
    "directory": ("<dir>", None, "is a directory", 2),
    "binary_non_utf8": (b"\xff\xfe\x00binary", None, "cannot read kernel file", 2),
    # a verdict of bad_input is bad input: exit 2 like every other (issue 17)
    "empty_file": ("", "bad_input", "the candidate is empty", 2),
    "syntax_error": (
        KERNEL_OK.replace("def relu(", "def relu(("),
        "syntax_error",
        "SyntaxError",
        1,
    ),
    "no_model_new": (
        KERNEL_OK.replace("class ModelNew", "class Model"),
        "bad_input",
        "defines no `class ModelNew",
        2,
    ),
    "no_triton_jit": (
        HEADER + "class ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n",
        "bad_input",
        "no @triton.jit kernel",
        2,
    ),
}


def _write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    if content is None:
        return path
    if content == "<dir>":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(str(content))
    return path


def _run(capsys, problem: Path, kernel: Path) -> tuple[int, dict, str]:
    rc = main(
        [
            "verify",
            str(problem),
            str(kernel),
            "--json",
            "--trials",
            "1",
            "--target",
            "none",
            "--timeout",
            "60",
        ]
    )
    out, err = capsys.readouterr()
    last = out.strip().splitlines()[-1] if out.strip() else "{}"
    return rc, json.loads(last), err


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_bad_problem(tmp_path, capsys, name):
    content, fragment, code = PROBLEMS[name]
    problem = _write(tmp_path, "problem.py", content)
    start = time.monotonic()
    rc, data, err = _run(capsys, problem, RELU_KERNEL)
    assert rc == code, (rc, err)
    assert data["status"] == "bad_input" and data["exit_code"] == code
    assert fragment in data["message"], data["message"]
    assert "Traceback" not in err and "bad input" in err
    if name.startswith("too_large"):
        assert time.monotonic() - start < 30  # refused from the meta-device estimate, not run


def test_cuda_in_get_inputs_still_loads_on_cpu(tmp_path, capsys):
    problem = _write(
        tmp_path,
        "problem.py",
        GOOD_PROBLEM.replace(
            "return [torch.randn(BATCH, DIM)]", "return [torch.randn(BATCH, DIM).cuda()]"
        ),
    )
    assert ".cuda()" in problem.read_text()
    rc, data, err = _run(capsys, problem, RELU_KERNEL)
    assert rc == 0 and data["status"] == "ok", err


@pytest.mark.parametrize("name", list(KERNELS))
def test_bad_kernel(tmp_path, capsys, name):
    content, status, fragment, code = KERNELS[name]
    kernel = _write(tmp_path, "kernel.py", content)
    rc, data, err = _run(capsys, RELU_PROBLEM, kernel)
    assert rc == code, (rc, err)
    assert data["status"] == (status or "bad_input")
    assert fragment in data["message"], data["message"]
    assert "Traceback" not in err
